"""The simulated user of a MapSatisfy dialogue.

Two simulators with one interface, `await user.reply(dialogue) -> str`, where `dialogue` is the
list of (role, text) turns the user has seen so far (the root query first, then the assistant's
visible replies and the user's answers):

- `RuleBasedUser` (the offline default): deterministic. It answers only when the assistant's
  latest message asks something, and then only what it asks, from the structured full intent
  (the full intent split into clauses, each tagged with the slots it speaks about); a slot the
  intent does not contain gets "I am not sure, either is fine". It never volunteers the intent:
  a polite closing offer ("如需导航请告诉我") asks nothing, and a yes/no offer of an action
  ("需要我帮您导航吗？") gets a bare yes when the intent wants that action (the dialogue goes on)
  and a no otherwise (the dialogue ends). When nothing is asked it closes with
  `[Finish Conversation]`, as the C.1 prompt's termination rules require.
- `LLMUser`: the appendix C.1 prompt (`prompts/user_simulator.txt`) on a model, used when a
  `user` model role is configured.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geoeval.api import clean_text

FINISH = "[Finish Conversation]"
PROMPTS = Path(__file__).resolve().parents[1] / "prompts"

# Slots a clarification question may ask about, with the words that signal each (Chinese, as the
# demo is, and English). A question asks a slot when it contains one of its words; a full-intent
# clause answers a slot when it contains one of them.
SLOT_WORDS: dict[str, tuple[str, ...]] = {
    "destination": (
        "目的地",
        "去哪",
        "哪里",
        "哪儿",
        "地点",
        "景点",
        "位置",
        "地方",
        "城市",
        "终点",
        "destination",
        "where",
        "place",
        "city",
    ),
    "time": (
        "时间",
        "几点",
        "什么时候",
        "日期",
        "今天",
        "明天",
        "今晚",
        "晚上",
        "早上",
        "上午",
        "下午",
        "中午",
        "傍晚",
        "白天",
        "夜间",
        "时段",
        "周末",
        "点前",
        "点到",
        "点出发",
        "when",
        "time",
        "date",
        "tonight",
        "evening",
    ),
    "travel_mode": (
        "出行方式",
        "交通",
        "地铁",
        "公交",
        "驾车",
        "自驾",
        "开车",
        "骑行",
        "步行",
        "打车",
        "坐车",
        "mode",
        "transport",
        "drive",
        "driving",
        "subway",
        "bus",
        "walk",
        "bike",
        "taxi",
    ),
    "budget": ("预算", "价格", "价位", "费用", "花费", "便宜", "贵", "budget", "price", "cost", "cheap"),
    "party": ("几个人", "人数", "几位", "同行", "带", "people", "how many", "party", "kids"),
    # not 需要: it opens offers ("需要我帮您导航吗") and closings ("如需要…"), which ask no preference
    "preference": (
        "偏好",
        "喜欢",
        "倾向",
        "希望",
        "想要",
        "要求",
        "最好",
        "类型",
        "prefer",
        "preference",
        "like",
        "want",
        "requirement",
        "type",
        "kind",
    ),
}

# Signals that a message asks the user for something (C.1 section 4.B: a question mark, or a
# request for an answer, a choice or a confirmation).
# 还是 is not one: "A还是B？" carries its question mark, and 还是 also means "still" in a statement.
_QUESTION_MARKERS = (
    "?",
    "？",
    "吗",
    "请问",
    "请告诉",
    "告诉我",
    "是否",
    "哪一个",
    "哪个",
    "要不要",
    "需不需要",
    "可以吗",
    "which",
    "would you",
    "do you",
    "could you tell",
    "please tell",
    "let me know",
)
# A sentence with one of these is a polite closing offer, not a question: it needs no answer.
_CLOSING_MARKERS = (
    "如需",
    "如果需要",
    "如有需要",
    "需要的话",
    "有需要",
    "若需要",
    "随时",
    "如有其他",
    "如果还有",
    "还有什么可以帮",
    "if you need",
    "let me know if",
    "feel free",
)
# A request with one of these offers an action of the assistant, to be confirmed yes or no.
_OFFER_MARKERS = (
    "需要我",
    "要我",
    "要不要我",
    "需不需要我",
    "是否需要我",
    "我可以帮",
    "我帮您",
    "我帮你",
    "我来帮",
    "我为您",
    "帮您",
    "为您",
    "shall i",
    "should i",
    "do you want me",
    "would you like me",
    "want me to",
)
# actions an offer can name, with the words of a full intent that want them
_ACTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "navigate": (
        ("导航", "路线", "规划", "怎么走", "带路", "navigate", "route"),
        ("去", "前往", "到", "导航", "路线", "规划", "怎么走", "go to", "route"),
    ),
    "book": (("预订", "订", "预约", "book", "reserve"), ("订", "预约", "book", "reserve")),
    "taxi": (("打车", "叫车", "taxi"), ("打车", "叫车", "taxi")),
}
# quoted text is someone's words (the user's request restated, a place's name), never the assistant asking
_QUOTED = re.compile(r"“[^”]*”|「[^」]*」|\"[^\"]*\"")
_SENTENCE_SPLIT = re.compile(r"(?<=[。！!？?\n])")
_OPEN_QUESTION_WORDS = ("其他", "还有", "补充", "别的", "anything else", "other", "more")
_CLAUSE_SPLIT = re.compile(r"[，。；;！!？?\n]|,(?!\d)")


def is_request(text: str) -> bool:
    """Whether an assistant message asks the user to answer, choose or confirm."""
    lowered = (text or "").lower()
    return any(m in lowered for m in _QUESTION_MARKERS)


def without_closings(text: str) -> str:
    """The message without its polite closing sentences ("如需…请告诉我")."""
    kept = [p for p in _SENTENCE_SPLIT.split(text or "") if not any(m in p.lower() for m in _CLOSING_MARKERS)]
    return "".join(kept)


def offered_action(text: str) -> str | None:
    """The action a yes/no offer names ("需要我帮您导航吗？" -> navigate); "" for an offer of an
    action this list does not know; None when the message is no offer."""
    lowered = (text or "").lower()
    if not any(m in lowered for m in _OFFER_MARKERS):
        return None
    return next((a for a, (words, _) in _ACTIONS.items() if any(w in lowered for w in words)), "")


def asked_slots(text: str) -> list[str]:
    """The slots a question names, in `SLOT_WORDS` order."""
    lowered = (text or "").lower()
    return [slot for slot, words in SLOT_WORDS.items() if any(w in lowered for w in words)]


@dataclass(frozen=True)
class IntentClause:
    text: str
    slots: tuple[str, ...]


@dataclass(frozen=True)
class StructuredIntent:
    """The full intent as clauses, each tagged with the slots it answers."""

    clauses: tuple[IntentClause, ...] = field(default_factory=tuple)

    @classmethod
    def parse(cls, full_intent: str) -> StructuredIntent:
        clauses = []
        for part in _CLAUSE_SPLIT.split(full_intent or ""):
            part = part.strip(" 、")
            if part:
                clauses.append(IntentClause(part, tuple(asked_slots(part))))
        return cls(tuple(clauses))

    def answer(self, slots: Sequence[str]) -> list[str]:
        """The clauses that speak about any of `slots`, in intent order."""
        wanted = set(slots)
        return [c.text for c in self.clauses if wanted & set(c.slots)]


class RuleBasedUser:
    """Deterministic user: answers only the asked slots from the structured full intent."""

    def __init__(self, query: str, full_intent: str) -> None:
        self.query = query
        self.full_intent = full_intent or ""
        self.intent = StructuredIntent.parse(full_intent)
        self._told: set[str] = set()  # clauses already given: an open question gets the next one

    async def reply(self, dialogue: Sequence[tuple[str, str]]) -> str:
        return self.reply_to(dialogue[-1][1] if dialogue and dialogue[-1][0] == "assistant" else "")

    def wants(self, action: str) -> bool:
        """Whether the full intent wants `action` (its intent words occur in the intent)."""
        intent = self.full_intent.lower()
        return bool(action) and any(w in intent for w in _ACTIONS[action][1])

    def reply_to(self, assistant_text: str) -> str:
        assistant_text = without_closings(assistant_text)
        if not is_request(_QUOTED.sub("", assistant_text)):
            # a result, a statement, a greeting or a polite closing: nothing is asked, nothing new is said
            return f"好的，谢谢。{FINISH}"
        questions = [p for p in _SENTENCE_SPLIT.split(_QUOTED.sub("", assistant_text)) if is_request(p)]
        action = offered_action(questions[-1]) if questions else None
        if action is not None and not asked_slots(questions[-1]):
            # a yes/no offer: a bare yes when the intent wants it, else no and the intent is served
            return "好的，需要。" if self.wants(action) else f"不用了，谢谢。{FINISH}"
        slots = asked_slots(assistant_text)
        lowered = assistant_text.lower()
        answer = [c for c in self.intent.answer(slots) if c not in self.query] if slots else []
        if not answer and any(w in lowered for w in _OPEN_QUESTION_WORDS):
            # "anything else?": the first part of the intent not said yet (C.1 section 4.C.6)
            answer = [c.text for c in self.intent.clauses if c.text not in self._told and c.text not in self.query][:1]
        if not answer:
            if not slots and not any(w in lowered for w in _OPEN_QUESTION_WORDS):
                return f"好的，谢谢。{FINISH}"  # a confirmation only ("shall I go on?"): nothing pending
            return "这个我不确定，都可以。"  # unmentioned means unknown (C.1 section 4.A)
        self._told.update(answer)
        return "，".join(answer) + "。"


def fill_user_prompt(query: str, full_intent: str, current_time: str, current_location: str, persona: str = "") -> str:
    template = (PROMPTS / "user_simulator.txt").read_text(encoding="utf-8")
    for key, value in (
        ("{current_time}", current_time),
        ("{current_location}", current_location),
        ("{query}", query),
        ("{full_intent}", full_intent),
        ("{persona}", persona or "(none)"),
    ):
        template = template.replace(key, value)
    return template


class LLMUser:
    """The appendix C.1 user simulator on a model (an Inspect `Model`): the prompt as the system
    message, then the dialogue with the roles swapped (the simulator speaks as the assistant)."""

    def __init__(self, model: Any, system_prompt: str) -> None:
        self.model = model
        self.system_prompt = system_prompt

    async def reply(self, dialogue: Sequence[tuple[str, str]]) -> str:
        from inspect_ai.model import ChatMessageSystem, ChatMessageUser

        history = "\n".join(f"[{i}] role={role}: {text}" for i, (role, text) in enumerate(dialogue))
        messages = [
            ChatMessageSystem(content=self.system_prompt),
            ChatMessageUser(content=f"conversation_history (maxindex={len(dialogue) - 1}):\n{history}"),
        ]
        output = await self.model.generate(messages)
        # the reply becomes a user message the agent is sent next: it must be valid UTF-8 text
        text = clean_text(output.completion or "").strip()
        return text or FINISH
