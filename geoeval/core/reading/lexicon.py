"""The cue words of the one-answer rule, once for every suite, in the languages answers are read
in (English, Chinese, Spanish, French, German, Japanese): the words around a candidate answer
that say what the answer does with it. Every pattern is matched in `normalise.fold`ed text
(NFKC, case-folded, one space), on the text of one sentence around the candidate.

* `REJECT_BEFORE`: right before a candidate, it rejects it ("do not take X", "avoid X", "instead
  of X", "rather than X", "不要去X", "而不是X", "évitez X", "statt X"); `REJECT_LABEL`: a label
  before a colon that rejects what follows ("Wrong route: X", "Not recommended: X",
  "Alternative (slower): X").
* `REJECT_AFTER`: right after a candidate, it rejects it ("X is wrong", "X: it is slower", "X
  (not optimal)", "X has closed down", "X不对", "X已经不营业", "X est plus long", "X ist falsch").
* `CORRECTION`: before a candidate in its sentence (or on the line that leads to it), it replaces
  what the answer said before ("Actually, X", "Wait, X", "Correction: X", "On second thought X",
  "更正：X", "不对，应该是X", "En realidad, X", "En fait, X", "Eigentlich X", "訂正：X");
  `CORRECTION_AFTER`: after it ("take X instead"). `RETRACTION`: a sentence with no candidate
  that withdraws the one before ("Scratch that.", "That is wrong.", "Ignore the above.").
* `FINAL_STRONG` / `FINAL_WEAK`: before a candidate, it commits to it as the answer: an explicit
  final answer ("Final answer:", "In conclusion", "答案", "最终", "Respuesta final", "Fazit")
  outranks a conclusion ("So", "Therefore", "The best route is", "I recommend", "所以", "推荐").
  `FINAL_HEADING`: a heading or lead line that does ("## Final answer", "**Answer:**").
* `HEDGE`: in the sentence, it makes a commitment tentative ("probably", "maybe", "也许", "quizás",
  "vielleicht"): a hedged conclusion is a candidate like any other, not a commitment.
* `ANAPHOR`: a sentence that opens with it speaks of the candidate named last; with a rejection
  right after it ("It is closed.", "它已经不营业了。"), it rejects that candidate.
* `WITHDRAWAL`: anywhere in a recommendation's own reason, it withdraws the recommendation.
* `ECHO`: before a candidate, it restates the question ("You asked for", "Question:", "您问",
  "Vous demandez"); a sentence that ends in a question mark asks, it does not answer.
"""

from __future__ import annotations

import re

# words that may stand between a cue and its candidate ("do not take the route X", "不要去X")
_FILLER = (
    r"(?:\W*(?:\b(?:take|taking|use|using|go|going|ride|riding|choose|choosing|pick|follow|recommend|visit|"
    r"go\s+to|go\s+with|via|through|by|the|a|an|this|that|route|path|option|line|place|one|plan|answer|"
    r"tomar|tome|usar|use|el|la|los|las|ruta|camino|prendre|prenez|le|les|une?|itinéraire|chemin|"
    r"nehmen|nimm|die|der|das|den|route|weg)\b|选择|选|去|走|乘坐|坐|搭乘|前往|这家|那家|这个|那个|路线)){0,3}"
)


def _cues(*alternatives: str) -> str:
    return "(?:" + "|".join(alternatives) + ")"


_REJECT_WORDS = _cues(
    # English
    r"\bnot",
    r"\bdon'?t",
    r"\bdo\s+not",
    r"\bnever",
    r"\bavoid(?:ing)?",
    r"\binstead\s+of",
    r"\brather\s+than",
    r"\bunlike",
    r"\bexcept(?:\s+for)?",
    r"\bexcluding",
    r"\bskip(?:ping)?",
    r"\bdiscard(?:ing)?",
    r"\breject(?:ing)?",
    r"\bruled?\s+out",
    r"\bno\s+longer\s+recommend",
    r"\bagainst",
    r"\bover",  # "X over Y": Y is what is passed over (only right before a candidate)
    r"\bthan",  # "closer than Y"
    r"\bnor",
    # Chinese
    "不要去",
    "不要选",
    "不要",
    "不推荐",
    "不建议",
    "别去",
    "别选",
    "避开",
    "避免",
    "而不是",
    "不是",
    "并非",
    "排除",
    "放弃",
    "不去",
    "不选",
    "除了",
    "不如",
    # Spanish
    r"\bno\s+(?:tome|tomes|use|uses|vaya|vayas|recomiendo)",
    r"\bevit(?:e|es|ar|a)",
    r"\ben\s+(?:lugar|vez)\s+de",
    r"\bexcepto",
    # French
    r"\bne\s+(?:prenez|prends|prenons|choisissez|recommande)\s+pas",
    r"\bévit(?:ez|er|e)",
    r"\bau\s+lieu\s+de",
    r"\bplutôt\s+que",
    r"\bsauf",
    # German
    r"\bnicht",
    r"\bkein(?:e|en)?",
    r"\bvermeid(?:e|en)",
    r"\b(?:an)?statt",
    r"\baußer",
    # Japanese
    "ではなく",
    "避けて",
)
#: right before a candidate (only filler between): it rejects the candidate
REJECT_BEFORE = re.compile(_REJECT_WORDS + _FILLER + r"\W*$")

_BAD = _cues(
    r"wrong",
    r"incorrect",
    r"invalid",
    r"suboptimal",
    r"sub-optimal",
    r"worse",
    r"longer",
    r"slower",
    r"costlier",
    r"pricier",
    r"more\s+expensive",
    r"more\s+(?:transfers|changes|stops|stations)",
    r"(?:an?\s+)?(?:extra|additional)\s+(?:transfer|change|stops?|stations?)",
    r"less\s+(?:efficient|direct|comfortable|reliable)",
    r"too\s+(?:long|slow|far|expensive|many)",
    r"(?:a\s+)?(?:bad|poor|mistaken)\s+(?:choice|idea|option|answer)",
    r"not\s+(?:the\s+)?(?:optimal|correct|right|valid|ideal|best|shortest|fastest|cheapest|answer|good|"
    r"recommended|possible|available|open|a\s+good\s+(?:choice|idea|option))",
    r"(?:permanently\s+)?closed(?:\s+down)?",
    r"shut\s+down",
    r"out\s+of\s+business",
    r"no\s+longer\s+(?:open|operating|in\s+business|available)",
    r"out",  # "X is out"
    r"a\s+mistake",
    r"an\s+error",
    r"excluded",
    r"ruled\s+out",
    r"rejected",
    r"not\s+recommended",
    r"to\s+be\s+avoided",
)
_AFTER_LEAD = r"^\W*(?:\s*(?:it|this|that|which|but|and|here)\b)?\s*(?:is|are|was|were|'s|would\s+be|would|seems?|looks?|will\s+be|has|had|gets|takes?|needs?|requires?|involves?)?\s*(?:definitely\s+|clearly\s+|actually\s+|much\s+|a\s+bit\s+|slightly\s+|even\s+|also\s+)?"
_BAD_AFTER_ZH = _cues(
    "不对",
    "是错的",
    "错了",
    "错误",
    "不行",
    "不推荐",
    "不建议",
    "不适合",
    "不可取",
    "更慢",
    "更长",
    "更贵",
    "更远",
    "绕路",
    "已经不营业",
    "不营业",
    "已停业",
    "停业",
    "已关闭",
    "关闭了",
    "已关门",
    "关门了",
    "倒闭",
    "暂停营业",
    "歇业",
    "已搬迁",
    "不要去",
    "别去",
    "は間違い",
    "は不正解",
    "ではない",
    "はダメ",
    "は遅い",
)
_BAD_AFTER_OTHER = _cues(
    r"es\s+(?:incorrect[oa]|equivocad[oa]|peor|más\s+(?:lent[oa]|larg[oa]|car[oa]))",
    r"está\s+mal",
    r"no\s+es\s+(?:la\s+)?(?:óptim[oa]|correct[oa]|mejor)",
    r"est\s+(?:faux|fausse|incorrect[e]?|pire|plus\s+(?:lent|long|cher))",
    r"n'est\s+pas\s+(?:la\s+)?(?:bonne|optimal[e]?|correct[e]?|meilleur[e]?)",
    r"ist\s+(?:falsch|schlechter|langsamer|länger|teurer|nicht\s+(?:optimal|richtig|korrekt|die\s+beste))",
)
#: right after a candidate: it rejects the candidate
REJECT_AFTER = re.compile(
    _cues(
        _AFTER_LEAD + r"\(?\s*" + _BAD + r"\b",
        r"^\W*(?:它|这|那)?(?:是|就)?" + _BAD_AFTER_ZH,
        r"^\W*" + _BAD_AFTER_OTHER,
    )
)
#: a label ending right before the candidate (after its colon) that rejects it
REJECT_LABEL = re.compile(
    _cues(
        r"\b(?:wrong|incorrect|rejected|invalid|bad|worse|avoid|discarded|not\s+recommended|do\s+not\s+(?:take|use|go)|"
        r"don'?t\s+(?:take|use|go)|slower|longer|costlier|more\s+expensive|suboptimal|not\s+optimal)\b"
        r"(?:\s+(?:route|path|option|answer|choice|one|place|plan|alternative)s?)?\W*\)?\s*[:：]?$",
        r"(?:错误|不推荐|不建议|避开|避免|不要|更慢|更长|更贵)\W*[:：]?$",
        r"\b(?:incorrect[oa]|evitar|incorrecte|à\s+éviter|falsch|vermeiden)\b\W*[:：]?$",
    )
)

_CORRECTION_WORDS = _cues(
    # English
    r"\bactually\b",
    r"\bcorrection\b",
    r"\bcorrected\b",
    r"\bon\s+second\s+thoughts?\b",
    r"\bon\s+reflection\b",
    r"\bon\s+closer\s+(?:look|inspection)\b",
    r"\bwait\b",
    r"\bhold\s+on\b",
    r"\bhang\s+on\b",
    r"\bi\s+was\s+wrong\b",
    r"\bi\s+made\s+(?:a|an)\s+(?:mistake|error)\b",
    r"\bmy\s+(?:mistake|bad|error)\b",
    r"\blet\s+me\s+(?:correct|fix|revise|redo)\b",
    r"\bscratch\s+that\b",
    r"\bi\s+meant\b",
    r"\bsorry\b",
    r"\boops\b",
    r"\brevised\b",
    r"\bupdated?\s*(?:answer|route|plan|recommendation)?\s*:",
    r"\bthe\s+(?:correct|right|corrected|actual)\s+(?:route|answer|one|path|plan|place|value|count)\s+(?:is|would\s+be)\b",
    r"\bthat\s+(?:'s|is|was)\s+(?:wrong|incorrect|not\s+right)\b",
    r"\bno,\s+(?:that|it)\b",
    r"\bbetter\s*:",
    r"\brather\s*[,:]",
    r"\binstead\s*[,:]",
    # Chinese
    "更正",
    "纠正",
    "订正",
    "改为",
    "改去",
    "请改",
    "应改",
    "说错了",
    "我说错",
    "不对",
    "等等",
    "等一下",
    "其实",
    "实际上",
    "应该是",
    "正确的是",
    "重新考虑",
    # Spanish
    r"\ben\s+realidad\b",
    r"\bcorrecci[oó]n\b",
    r"\bespera\b",
    r"\bme\s+equivoqu[eé]\b",
    r"\bmejor\s+dicho\b",
    # French
    r"\ben\s+fait\b",
    r"\battendez\b",
    r"\bje\s+me\s+suis\s+tromp[eé]e?\b",
    r"\bplut[oô]t\s*,",
    # German
    r"\beigentlich\b",
    r"\bkorrektur\b",
    r"\bmoment\b",
    r"\bwarte\b",
    r"\bich\s+habe\s+mich\s+geirrt\b",
    r"\bbesser\s+gesagt\b",
    r"\bvielmehr\b",
    # Japanese
    "訂正",
    "実は",
    "間違えました",
    "正しくは",
)
#: before a candidate in its sentence (or on its lead line): the candidate corrects what came before
CORRECTION = re.compile(_CORRECTION_WORDS)
#: after a candidate: "take X instead" (not "instead of")
CORRECTION_AFTER = re.compile(
    r"^\W*(?:\w+\s+){0,2}instead\b(?!\s+of)|^\W*(?:en\s+su\s+lugar|à\s+la\s+place|stattdessen)\b"
)
#: a sentence without a candidate that withdraws what came before
RETRACTION = re.compile(
    _cues(
        r"\bscratch\s+that\b",
        r"\bignore\s+(?:that|this|the\s+above|my\s+(?:previous|earlier|last)\s+\w+)\b",
        r"\bdisregard\b",
        r"\bthat\s*(?:'s|is|was)\s+(?:wrong|incorrect|not\s+right|a\s+mistake)\b",
        r"\bi\s+was\s+wrong\b",
        r"\bi\s+made\s+(?:a|an)\s+(?:mistake|error)\b",
        "说错了",
        "我说错",
        "不对",
        "错了",
        "eso\\s+es\\s+incorrecto",
        "c'est\\s+faux",
        "das\\s+ist\\s+falsch",
        "間違えました",
    )
)

_FINAL_STRONG = _cues(
    r"\bfinal\s+(?:answer|route|recommendation|plan|choice|pick|result|verdict|count|value)\b",
    r"\bfinal\s*:",
    r"\b(?:my\s+)?answer\s*(?:is\b|[:：])",
    r"\bthe\s+answer\s+(?:is|would\s+be)\b",
    r"\bin\s+conclusion\b",
    r"\bto\s+conclude\b",
    r"\bin\s+summary\b",
    r"\bto\s+sum\s+up\b",
    r"\bconclusion\s*[:：]",
    r"\bbottom\s+line\b",
    "最终",
    "最后答案",
    "答案",
    "结论",
    "综上",
    "总结",
    r"\brespuesta(?:\s+final)?\b",
    r"\ben\s+(?:conclusión|resumen)\b",
    r"\bréponse(?:\s+finale)?\b",
    r"\ben\s+(?:conclusion|résumé)\b",
    r"\b(?:endgültige\s+)?antwort\b",
    r"\bfazit\b",
    r"\bzusammenfassend\b",
    "最終",
    "答え",
    "結論",
    "まとめ",
)
_FINAL_WEAK = _cues(
    r"\bso\b",
    r"\btherefore\b",
    r"\bthus\b",
    r"\bhence\b",
    r"\bthat\s+is\s+why\b",
    r"\bthe\s+(?:best|optimal|shortest|fastest|cheapest|quickest|recommended|correct|right|ideal|ideal|suitable)\s+"
    r"(?:route|path|option|choice|answer|way|one|place|plan|itinerary|trip)\s+(?:is|would\s+be|here\s+is)\b",
    r"\bi\s+(?:would\s+|'d\s+|will\s+|can\s+)?(?:recommend|suggest|choose|pick|go\s+with|take)\b",
    r"\bmy\s+(?:recommendation|choice|pick|suggestion)\b",
    r"\brecommended\s*(?:route|place|option)?\s*[:：]",
    r"\byou\s+should\s+(?:take|go|use|visit)\b",
    r"\bgo\s+with\b",
    "所以",
    "因此",
    "因而",
    "推荐",
    "建议",
    "我选",
    r"\bpor\s+lo\s+tanto\b",
    r"\basí\s+que\b",
    r"\brecomiendo\b",
    r"\bdonc\b",
    r"\bainsi\b",
    r"\bje\s+recommande\b",
    r"\bdaher\b",
    r"\bdeshalb\b",
    r"\bich\s+empfehle\b",
    "したがって",
    "なので",
    "おすすめ",
)
#: before a candidate: an explicit final answer
FINAL_STRONG = re.compile(_FINAL_STRONG)
#: before a candidate: a conclusion
FINAL_WEAK = re.compile(_FINAL_WEAK)
#: a heading or a lead line ("**Answer:**", "## Final route") that commits to what it leads to
FINAL_HEADING = re.compile(
    r"^\W*(?:(?:my|the|our)\s+)?(?:final\s+)?(?:answer|final|recommendation|conclusion|result|solution|verdict)\b"
    r"|^\W*(?:final|recommended|optimal|best)\s+(?:route|path|plan|place|choice|itinerary)\b"
    r"|^\W*(?:最终|答案|结论|推荐|建议)"
    r"|^\W*(?:respuesta|réponse|antwort|fazit|conclusi[oó]n|結論|答え)"
)
#: in a candidate's sentence: the commitment is tentative
HEDGE = re.compile(
    _cues(
        r"\bprobably\b",
        r"\bmaybe\b",
        r"\bperhaps\b",
        r"\bpossibly\b",
        r"\bmight\b",
        r"\bcould\s+be\b",
        r"\bnot\s+sure\b",
        r"\bunclear\b",
        r"\bi\s+guess\b",
        "不确定",
        "也许",
        "可能",
        "或许",
        "大概",
        r"\bquiz[aá]s\b",
        r"\btal\s+vez\b",
        r"\bpeut-être\b",
        r"\bvielleicht\b",
        "たぶん",
        "かもしれ",
    )
)
#: in a candidate's sentence: it offers an alternative ("or", "alternatively", "也可以")
ALTERNATIVE = re.compile(
    _cues(
        r"\bor\b",
        r"\beither\b",
        r"\balternatively\b",
        r"\balternative\b",
        r"\banother\s+(?:option|choice|route|place)\b",
        r"\boption\s*\d",
        r"\bcould\s+also\b",
        r"\bas\s+well\b",
        r"\bbackup\b",
        "或者",
        "或是",
        "也可以",
        "也可",
        "还可以",
        "备选",
        "候选",
        "其次",
        "另一个",
        "也推荐",
        "也不错",
        r"\bo\s+bien\b",
        r"\bou\b",
        r"\boder\b",
        "または",
    )
)
#: words that open a restatement of what the user said (Chinese; the English ones are in `ECHO`)
ECHO_LEADS_ZH = ("您问", "你问", "您说", "你说", "您要", "你要", "您想", "你想", "您需要", "您的需求", "关于您")
#: before a candidate: the answer restates the question
ECHO = re.compile(
    _cues(
        r"\byou\s+(?:asked|want|wanted|need|said|would\s+like|'d\s+like|are\s+looking)\b",
        r"\bthe\s+(?:question|task|request|user)\s+(?:is|asks|asked|wants)\b",
        r"\b(?:question|q|task|request|user|prompt)\s*[:：]",
        r"\brestating\b",
        *ECHO_LEADS_ZH,
        "问题[:：]",
        r"\busted\s+pregunta\b",
        r"\bvous\s+demandez\b",
        r"\bsie\s+fragen\b",
        "質問",
    )
)
#: anywhere in a recommendation's own reason: it withdraws the recommendation ("Not recommended: it
#: has closed down", "I wouldn't go there", "已经不营业")
WITHDRAWAL = re.compile(
    _cues(
        r"\bnot\s+recommended\b",
        r"\b(?:do\s+not|don'?t)\s+(?:go|visit|recommend)\b",
        r"\bi\s+(?:would|do)\s+not\s+(?:recommend|go)\b",
        r"\bi\s+wouldn'?t\s+(?:recommend|go)\b",
        r"\bavoid\s+(?:it|this|going)\b",
        r"\bskip\s+(?:it|this)\b",
        r"\b(?:permanently\s+)?closed\s+down\b",
        r"\bpermanently\s+closed\b",
        r"\bno\s+longer\s+(?:open|operating|in\s+business)\b",
        r"\bout\s+of\s+business\b",
        r"\bshut\s+down\b",
        "不推荐",
        "不建议",
        "别去",
        "已经?不营业",
        "停业",
        "倒闭",
        r"\bno\s+(?:lo\s+)?recomiendo\b",
        r"\b(?:est[aá]\s+)?cerrad[oa]\s+(?:permanentemente|definitivamente)\b",
        r"\bje\s+ne\s+(?:le\s+|la\s+)?recommande\s+pas\b",
        r"\bfermé\s+(?:définitivement|pour\s+toujours)\b",
        r"\bnicht\s+empfohlen\b",
        r"\bdauerhaft\s+geschlossen\b",
    )
)
#: a sentence that opens with one of these speaks of the candidate named last ("It has closed
#: down.", "它已经不营业了。", "That one is slower."): with a rejection after it, it rejects that one
ANAPHOR = re.compile(
    r"^\W*(?:(?:but|however|unfortunately|sadly|note(?:\s+that)?)\W+|[^,.;:，。；：]{1,40}[,，]\s*)?"
    r"(?:(?:it|this(?:\s+one|\s+place|\s+route)?|that(?:\s+one|\s+place|\s+route)?|the\s+(?:latter|former)|"
    r"ce(?:la|tte|t)?|es|das|dieser?|eso|esta?|este)\b|它|这家|该店|那家|这里|那里|该地|此店|这个|那个|该|その店)"
)
