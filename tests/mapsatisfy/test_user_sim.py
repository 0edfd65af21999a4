"""The simulated users: the rule-based one answers only what is asked, from the full intent, and
ends with [Finish Conversation]; the LLM one fills the C.1 prompt and speaks the model's reply."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from geoeval.suites.mapsatisfy.user.simulator import (
    FINISH,
    LLMUser,
    RuleBasedUser,
    StructuredIntent,
    asked_slots,
    fill_user_prompt,
    is_request,
)

INTENT = "去宁波万象城附近的充电站，最好在停车场内，驾车前往，今晚八点前到。"


def test_intent_clauses_are_tagged_with_their_slots():
    intent = StructuredIntent.parse(INTENT)
    by_text = {c.text: c.slots for c in intent.clauses}
    assert "travel_mode" in by_text["驾车前往"]
    assert "time" in by_text["今晚八点前到"]
    assert "travel_mode" not in by_text["最好在停车场内"]


def test_answers_only_the_asked_slot():
    user = RuleBasedUser("去万象城附近的充电站", INTENT)
    reply = user.reply_to("请问您的出行方式是？")
    assert reply == "驾车前往。"
    assert "八点" not in reply and "停车场" not in reply and FINISH not in reply


def test_answers_every_asked_slot_together():
    reply = RuleBasedUser("去万象城附近的充电站", INTENT).reply_to("您想什么时候到？出行方式呢？")
    assert "驾车前往" in reply and "今晚八点前到" in reply and "停车场" not in reply


def test_a_slot_the_intent_lacks_is_unknown():
    reply = RuleBasedUser("去万象城附近的充电站", INTENT).reply_to("请问您的预算是多少？")
    assert "不确定" in reply and FINISH not in reply


def test_a_result_without_a_question_ends_the_conversation():
    reply = RuleBasedUser("去万象城附近的充电站", INTENT).reply_to("已为您找到「万象城充电站」，距离1.2公里。")
    assert reply.endswith(FINISH)


def test_open_question_gets_the_next_unsaid_clause_once():
    user = RuleBasedUser("去万象城附近的充电站", INTENT)
    first = user.reply_to("还有其他补充吗？")
    second = user.reply_to("还有其他补充吗？")
    assert first != second and FINISH not in first


def test_reply_reads_the_latest_assistant_turn():
    user = RuleBasedUser("去万象城附近的充电站", INTENT)
    reply = asyncio.run(user.reply([("user", "去万象城附近的充电站"), ("assistant", "出行方式是？")]))
    assert reply == "驾车前往。"


def test_request_and_slot_detection():
    assert is_request("Which one do you prefer?") and is_request("需要导航吗")
    assert not is_request("万象城充电站在B2层。")
    assert asked_slots("什么时间出发？") == ["time"]


def test_llm_user_gets_the_c1_prompt_and_the_history():
    seen = {}

    class FakeModel:
        async def generate(self, messages):
            seen["messages"] = messages
            return SimpleNamespace(completion="驾车。")

    prompt = fill_user_prompt("去万象城附近的充电站", INTENT, "2026-05-07 22:10:32", "锦江花园", "")
    assert INTENT in prompt and "2026-05-07 22:10:32" in prompt and "{full_intent}" not in prompt
    assert "[Finish Conversation]" in prompt  # the C.1 termination rules are in it
    user = LLMUser(FakeModel(), prompt)
    reply = asyncio.run(user.reply([("user", "去万象城附近的充电站"), ("assistant", "出行方式是？")]))
    assert reply == "驾车。"
    assert seen["messages"][0].content == prompt
    assert "role=assistant: 出行方式是？" in seen["messages"][1].content


def test_an_offer_gets_a_bare_yes_when_the_intent_wants_it_and_nothing_leaks():
    user = RuleBasedUser("去万象城附近的充电站", INTENT)
    assert asked_slots("需要我帮您导航吗？") == []  # 需要 opens an offer, it asks no preference
    reply = user.reply_to("已为您找到「万象城充电站」。需要我帮您导航吗？")
    assert reply == "好的，需要。"  # the dialogue goes on: the intent wants to go there
    assert not any(c.text in reply for c in StructuredIntent.parse(INTENT).clauses)


def test_an_offer_the_intent_does_not_want_is_declined_and_ends_the_dialogue():
    reply = RuleBasedUser("去万象城附近的充电站", INTENT).reply_to("要我帮您预订吗？")
    assert reply.startswith("不用了") and reply.endswith(FINISH)


def test_a_polite_closing_or_a_still_asks_nothing():
    user = RuleBasedUser("去万象城附近的充电站", INTENT)
    for text in (
        "推荐「万象城充电站」，驾车18分钟。如需导航，请告诉我。",
        "推荐「万象城充电站」，驾车过去还是很方便的。",
    ):
        assert user.reply_to(text) == f"好的，谢谢。{FINISH}", text


def test_a_real_question_after_an_answer_is_still_answered():
    reply = RuleBasedUser("去万象城附近的充电站", INTENT).reply_to("推荐「万象城充电站」。您想开车还是坐地铁？")
    assert reply == "驾车前往。"


def test_a_quoted_question_is_the_users_words_not_a_question_to_answer():
    reply = RuleBasedUser("从这坐车对吗？", INTENT).reply_to(
        "关于您的需求“从这坐车对吗？”：推荐「苏州公园(公交站)」，坐27路。"
    )
    assert reply == f"好的，谢谢。{FINISH}"
