"""The evaluated agent's prompt (Figure 9) and the `submit_answer` description (Table 7).

Figure 9 is printed with the route schema (start, end, waypoints, optimal_order, ...), which is
the answer of Routing and Trip Design. Place Perception and Nearby Discovery answers are not
routes (Tables 5 and 6: a value, or a list of places), so their prompts keep Figure 9's rules and
closing lines word for word and show the schema of their own family instead.
"""

from __future__ import annotations

FIGURE9_RULES = """You are a geographic information assistant. Use the available tools to answer the user's question.

CRITICAL RULES:
1. NEVER hallucinate or fabricate data. ALL reasoning MUST be grounded in tool return results.
2. You MUST call tools to get real data before answering.
3. If your answer references social media insights, you MUST include ALL relevant note_ids in the ref field.
4. Use the EXACT values (names, IDs, distances, times) returned by tools.
5. After completing your analysis, you MUST call submit_answer() to deliver your final answer as a structured JSON object. Do NOT output JSON as plain text - always use submit_answer()."""

ROUTE_SCHEMA = """{
  "start": {"name": "NAME", "place_id": "PLACE_ID", "reason": "Why this place was selected based on criteria."},
  "end": {"name": "NAME", "place_id": "PLACE_ID", "reason": "Why this place was selected based on criteria."},
  "waypoints": [
    {"name": "NAME", "place_id": "PLACE_ID", "reason": "Why this place was selected based on criteria.",
     "ref": {"note_id": "NOTE_ID1,NOTE_ID2,...", "attribute_key": "comma-separated keys. tag:keyword,rating,cost"},
     "implicit_logic": "True"}
  ],
  "optimal_order": [{"name": "NAME", "place_id": "PLACE_ID", "visit_order": 1}, ...],
  "vehicle": "VEHICLE",
  "mode": "MODE",
  "total_distance_m": <number>,
  "total_time_s": <number>,
  "constraints_satisfied": ["description of each constraint met"]
}"""

PLACE_SCHEMA = """{
  "answer": <the value asked for: text, number, true/false, or the name of the place chosen>,
  "reason": "Why this is the answer, based on the tool results.",
  "ref": {"note_id": "NOTE_ID1,NOTE_ID2,...", "attribute_key": "comma-separated keys. tag:keyword,rating,cost"},
  "implicit_logic": "True"
}"""

NEARBY_SCHEMA = """{
  "answer": [
    {"name": "NAME", "place_id": "PLACE_ID", "reason": "Why this place was selected based on criteria.",
     "ref": {"note_id": "NOTE_ID1,NOTE_ID2,...", "attribute_key": "comma-separated keys. tag:keyword,rating,cost"},
     "implicit_logic": "True"}
  ]
}"""

SCHEMAS = {"place": PLACE_SCHEMA, "nearby": NEARBY_SCHEMA, "routing": ROUTE_SCHEMA, "trip": ROUTE_SCHEMA}

SUBMIT_DESCRIPTION = (
    "Submit the final structured JSON answer. The evaluated agent must call this last instead of printing plain JSON."
)
SUBMIT_PARAMETER = "Your final answer as a JSON object or array following the required format"


#: rule 5 and the closing lines under `answer_channel=text` (no submit tool: the last reply is the answer)
TEXT_RULE = (
    "5. After completing your analysis, give your final answer as a structured JSON object in your last "
    "message, and nothing else after it."
)


def system_prompt(task: str, answer_channel: str = "tool") -> str:
    """Figure 9 for a task family (the question follows in the user message); with
    `answer_channel="text"`, the same rules asking for the JSON in the last reply instead of a
    `submit_answer` call (the tools then offer none)."""
    if answer_channel == "text":
        rules = FIGURE9_RULES.rsplit("\n5. ", 1)[0] + "\n" + TEXT_RULE
        return (
            f"{rules}\n\n---\n\nYour final answer is a single JSON object containing ALL of the following "
            f"fields:\n\n{SCHEMAS[task]}\n\nUse the EXACT field names shown above."
        )
    return (
        f"{FIGURE9_RULES}\n\n---\n\nYou MUST call submit_answer(result=<your_answer>) where <your_answer> is a "
        f"single JSON object containing ALL of the following fields:\n\n{SCHEMAS[task]}\n\n"
        "IMPORTANT: Pass the ENTIRE object above as the `result` parameter. Do NOT split fields into separate "
        "parameters. Use the EXACT field names shown above."
    )


def user_prompt(question: str) -> str:
    return f"Now answer the following question:\n{question}"
