"""Reading and checking answers: the Table 5 answer (`answers`), the trajectory tau (`trajectory`), the database checks of A and SC (`judging`) and judge calibration (appendix B.2)."""
