"""The reading families of the meta-evaluation: a suite's right and wrong answer to one sample,
composed the ways real models compose answers, each with the order it must keep.

A suite gives, per sample, an `AnswerPair`: the reference answer as a model would state it in a
sentence (`right`, with whatever delivery the prompt asks for, MapTab's tags say), a wrong answer
of the same type stated the same way (`wrong`, a real alternative of the sample: another route,
another value, another record), the metrics the wrong one lowers (`affects`), the request
(`question`), and the right and wrong answers in the structured forms models use (`forms`,
`wrong_forms`: JSON, a table, a list). `reading_family_answers` composes them, a phrasing of each
variant drawn by the sample's seeded `rng` from several:

| family | variant | level |
| --- | --- | --- |
| `reasoning` | weighs the wrong answer, then the right one, and concludes with the right one | 0 |
| `reasoning` | the same, concluding with the wrong one | 1 |
| `reasoning` | a long preamble (the steps, restating the request), then the answer | 0 |
| `format` | the right answer in each of the suite's `forms` | 0 |
| `format` | the right and the wrong answer in one form, as two options | 1 |
| `language` | a final answer, a correction, a rejection in Chinese, Spanish, French, German or Japanese | 0 |
| `language` | a hedge or a correction away from the right answer in one of them | 1 |
| `correction` | the wrong answer, then a correction to the right one (also after a "final answer") | 0 |
| `correction` | the wrong answer withdrawn ("Scratch that."), then the right one | 0 |
| `correction` | the right answer, then a correction to the wrong one | 1 |
| `hedge` | "either ... or", numbered options, "probably ... but possibly", an alternative after the answer | 1 |
| `echo` | the request echoed (quoted, restated, asked back), then the right answer | 0 |

Level 0 must score as the reference on every metric; level 1 no higher than the wrong answer
alone (`defect:wrong_answer_alone`, its worst candidate) on `affects`, and strictly below the
reference where the wrong answer alone is (`geoeval.core.analysis.meta_eval`, `Tier.worst`). The phrasings are written as models write, not from the
reader's cue lists (`core/reading/lexicon.py`): the reader is judged on them.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from geoeval.core.records import Tier

#: the reading families, and the ordering accuracy each must reach on every metric
READING_FAMILIES = ("reasoning", "format", "language", "correction", "hedge", "echo")
READING_FAMILY_TARGET = 0.95


@dataclass(frozen=True)
class AnswerPair:
    """One sample's right and wrong answers, as the suite writes them (module docstring)."""

    right: str
    wrong: str | None
    affects: frozenset[str]
    question: str = ""
    forms: Mapping[str, str] = field(default_factory=dict)
    wrong_forms: Mapping[str, str] = field(default_factory=dict)


# ------------------------------------------------------------------------------------ phrasings

_WEIGH_RIGHT = (
    "Let me work through this step by step.\n\nOne candidate is {wrong}. Looking at it more closely, it is "
    "not the best choice here.\n\nAnother candidate is {right}. This one satisfies everything that was "
    "asked.\n\nSo the best answer is {right}",
    "I'll compare the options before answering.\n\n- First I considered {wrong}, but it does not fit the "
    "request as well.\n- Then I checked {right}, which fits.\n\nTherefore my answer is: {right}",
    "Thinking it over: {wrong} came to mind first, but after checking the details it falls short. "
    "{right} does not have that problem.\n\n**Final answer:** {right}",
    "Step 1: list what could work. {wrong} and {right} both look plausible.\n"
    "Step 2: check each against the request. {wrong} fails the check; {right} passes it.\n"
    "Step 3: conclusion. In conclusion, {right}",
)
_WEIGH_WRONG = (
    "Let me work through this step by step.\n\nOne candidate is {right}. Looking at it more closely, it is "
    "not the best choice here.\n\nAnother candidate is {wrong}. This one satisfies everything that was "
    "asked.\n\nSo the best answer is {wrong}",
    "I'll compare the options before answering.\n\n- First I considered {right}, but it does not fit the "
    "request as well.\n- Then I checked {wrong}, which fits.\n\nTherefore my answer is: {wrong}",
    "Thinking it over: {right} came to mind first, but after checking the details it falls short. "
    "{wrong} does not have that problem.\n\n**Final answer:** {wrong}",
)
_PREAMBLE = (
    "To answer this I will restate the task, gather what the map and the data say, and then give one "
    "answer.\n\nThe task: {question}\n\nI went through the information provided piece by piece, "
    "checking each detail against the request and discarding what does not apply. I also made sure "
    "nothing I state is invented.\n\nHaving done that, here is my answer:\n\n{right}",
    "## Approach\nI read the request carefully, collected the relevant facts and compared the "
    "possibilities one by one.\n\n## Notes\nSeveral details matter here, and I checked each of them "
    "twice. Nothing in the data contradicts the conclusion below.\n\n## Answer\n{right}",
)
_OPTIONS_FORM = (
    "Option A:\n{right_form}\n\nOption B:\n{wrong_form}",
    "Here are two possibilities.\n\n1.\n{right_form}\n\n2.\n{wrong_form}",
)
# (language, phrasing, level): level 0 keeps the right answer, level 1 ends off it
_LANGUAGE = (
    ("zh", "经过比较，最终答案：{right}", 0),
    ("zh", "{wrong}\n\n更正：刚才说错了，应该是 {right}", 0),
    ("zh", "不推荐 {wrong}。建议选择：{right}", 0),
    ("zh", "可能是 {right}，也可能是 {wrong}。", 1),
    ("es", "Respuesta final: {right}", 0),
    ("es", "{wrong}\n\nEn realidad, me equivoqué. La respuesta correcta es {right}", 0),
    ("es", "Quizás {right}, o tal vez {wrong}.", 1),
    ("fr", "Réponse finale : {right}", 0),
    ("fr", "Évitez {wrong}. Je recommande plutôt {right}", 0),
    ("fr", "{right}\n\nEn fait, je me suis trompé : {wrong}", 1),
    ("de", "Antwort: {right}", 0),
    ("de", "{wrong}\n\nKorrektur: Ich habe mich geirrt, richtig ist {right}", 0),
    ("de", "Vielleicht {right} oder {wrong}.", 1),
    ("ja", "結論：{right}", 0),
    ("ja", "{wrong}\n\n訂正：正しくは {right}", 0),
    ("ja", "{right}\n\n訂正：{wrong}", 1),
)
_CORRECT_TO_RIGHT = (
    "{wrong}\n\nWait, actually that's not right. {right}",
    "{wrong}\n\nHmm, on second thought: {right}",
    "My first thought was {wrong}, but I made a mistake there. The correct answer is {right}",
    "{wrong}\n\nCorrection — I misread the data. It should be {right}",
)
_CORRECT_AFTER_FINAL = (
    "Final answer: {wrong}\n\nOops, I need to fix that. Corrected final answer: {right}",
    "**Answer:** {wrong}\n\nActually, let me revise: the answer is {right}",
)
_WITHDRAW_THEN_RIGHT = (
    "{wrong}\n\nScratch that, I misread the data.\n\n{right}",
    "{wrong}\n\nIgnore the above, it was a mistake.\n\n{right}",
)
_CORRECT_AWAY = (
    "{right}\n\nWait, actually that's wrong. {wrong}",
    "{right}\n\nOn second thought, the answer is {wrong}",
    "My first answer was {right}, but I made a mistake. The correct answer is {wrong}",
)
_HEDGES = (
    ("either", "Either {right} or {wrong}."),
    ("either", "It is {right} or {wrong}; both are possible."),
    ("options", "1. {right}\n2. {wrong}"),
    ("options", "Option 1: {right}\n\nOption 2: {wrong}"),
    ("probably", "Probably {wrong}, but possibly {right}."),
    ("probably", "I think it's {right}, though it might be {wrong}."),
    ("alternative", "Final answer: {right}\n\nAlternatively, {wrong} would also work."),
    ("alternative", "{right}\n\nAnother option: {wrong}"),
)
_ECHOES = (
    'You asked: "{question}"\n\n{right}',
    "> {question}\n\nAnswer: {right}",
    "The question is: {question}? Here is my answer.\n\n{right}",
    "Question: {question}\n\nMy answer: {right}",
)


def _fill(template: str, pair: AnswerPair, **extra: str) -> str:
    return template.format(right=pair.right, wrong=pair.wrong or "", question=pair.question.strip(), **extra)


#: the wrong answer alone, the worst candidate every level-1 variant offers (`Tier.worst`)
WRONG_ALONE = "defect:wrong_answer_alone"


def _tier(family: str, variant: str, level: int, affects: frozenset[str] | None = None) -> Tier:
    if level == 1:
        return Tier(f"{family}:{variant}", level, affects, family, worst=WRONG_ALONE)
    return Tier(f"{family}:{variant}", level, None, family)


def reading_family_answers(pair: AnswerPair, rng: random.Random) -> list[tuple[Tier, str]]:
    """The reading families' answers of one sample (module docstring); a variant that needs a
    wrong answer, a question or a form the sample lacks is left out."""
    out: list[tuple[Tier, str]] = []
    affects = pair.affects
    wrong = pair.wrong is not None
    if wrong:
        out.append((Tier(WRONG_ALONE, 1, affects), pair.wrong or ""))
        out.append((_tier("reasoning", "weighs_then_right", 0), _fill(rng.choice(_WEIGH_RIGHT), pair)))
        out.append((_tier("reasoning", "weighs_then_wrong", 1, affects), _fill(rng.choice(_WEIGH_WRONG), pair)))
    out.append((_tier("reasoning", "long_preamble", 0), _fill(rng.choice(_PREAMBLE), pair)))
    for name, form in pair.forms.items():
        out.append((_tier("format", name, 0), form))
        if wrong and name in pair.wrong_forms:
            options = rng.choice(_OPTIONS_FORM).format(right_form=form, wrong_form=pair.wrong_forms[name])
            out.append((_tier("format", f"{name}_options", 1, affects), options))
    if wrong:
        kept = [t for t in _LANGUAGE if t[2] == 0]
        lost = [t for t in _LANGUAGE if t[2] == 1]
        for lang, template, level in (rng.choice(kept), rng.choice(kept), rng.choice(lost)):
            variant = f"{lang}_{'kept' if level == 0 else 'lost'}"
            out.append((_tier("language", variant, level, affects), _fill(template, pair)))
        out.append((_tier("correction", "to_right", 0), _fill(rng.choice(_CORRECT_TO_RIGHT), pair)))
        out.append((_tier("correction", "after_final", 0), _fill(rng.choice(_CORRECT_AFTER_FINAL), pair)))
        out.append((_tier("correction", "withdrawn", 0), _fill(rng.choice(_WITHDRAW_THEN_RIGHT), pair)))
        out.append((_tier("correction", "away", 1, affects), _fill(rng.choice(_CORRECT_AWAY), pair)))
        for kind in dict.fromkeys(k for k, _ in _HEDGES):
            template = rng.choice([t for k, t in _HEDGES if k == kind])
            out.append((_tier("hedge", kind, 1, affects), _fill(template, pair)))
    else:
        out.append((_tier("language", "zh_kept", 0), _fill(_LANGUAGE[0][1], pair)))
    if pair.question.strip():
        out.append((_tier("echo", "question_first", 0), _fill(rng.choice(_ECHOES), pair)))
    return out


def reading_family_targets(targets: Mapping[str, float], metrics: list[str]) -> dict[str, float]:
    """The target of every (reading family, metric) cell (`meta_eval_targets` keys): the metric's
    own target, and never below READING_FAMILY_TARGET."""
    return {
        f"{family}:{m}": max(float(targets.get(m, 1.0)), READING_FAMILY_TARGET)
        for family in READING_FAMILIES
        for m in metrics
    }
