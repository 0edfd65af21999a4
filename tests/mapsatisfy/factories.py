"""A small valid MapSatisfy record in the authors' format, for tests that need one."""

from __future__ import annotations

import copy


def record(**overrides):
    """A small valid record in the authors' format (nested objects, `paramter` spelling)."""
    base = {
        "task_id": "t1",
        "query": "去万象城附近的充电站",
        "context": {
            "uid": "u1",
            "time": "2026-05-07 22:10:32",
            "user_current_loc": "121.53634,29.90348",
            "user_loc_name": "锦江花园",
            "city": "浙江省/宁波市",
            "history": ["用户在58秒前追问：「去宁波万象城附近的充电站」。"],
        },
        "full_intent": "去宁波万象城附近、停车场内的充电站，驾车。",
        "ground_truth": {
            "explicit_intent": ["目标是充电站", "位置在万象城附近"],
            "implicit_intent": [
                {
                    "rubric_instruction": "优先停车场内的充电站",
                    "constraint_type": "soft",
                    "evidence_confidence": 1.2,
                    "evidence": "用户追问停车场",
                },
                {
                    "rubric_instruction": "按驾车规划",
                    "constraint_type": "hard",
                    "evidence_confidence": 0.384,
                    "evidence": "驾车占比85%",
                },
            ],
            "clarification_policy": {"max_allowed": 3, "evidence": "..."},
            "truth_trajectory": {
                "tool_calls": {
                    "expected_tools": ["search_poi", "get_navigation"],
                    "parameter_rules": {
                        "search_poi": {
                            "paramter": ["query"],
                            "rules": [{"param": "query", "rule_description": "地标"}],
                        },
                        "get_navigation": {"paramter": ["start_lon", "start_lat", "end_lon", "end_lat"], "rules": []},
                    },
                    "factual_answer_rubric": ["充电站名称应与工具返回一致"],
                }
            },
        },
    }
    data = copy.deepcopy(base)
    data.update(overrides)
    return data
