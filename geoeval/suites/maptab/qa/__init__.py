"""Diagnostic QA (appendices B.3, D.2): the 12 question types and their generation (`questions`), reference answers and wording."""
