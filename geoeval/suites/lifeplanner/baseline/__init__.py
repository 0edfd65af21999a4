"""`geoeval/heuristic_baseline` (`agent`): reads a question with general cues (`reading`), plans routes (`route`), replays a conversation (`session`) and its tool helpers (`tools`)."""
