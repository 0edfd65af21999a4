"""The LifePlanner case engine (section 3.2 "Evaluation Case Generation", Figure 10): a
deterministic data engine that derives, from one city database, cases for the 11 task × level
combinations in the proportions of Table 4, at any size.

For every case the engine works as the paper's data engine does, with templates in place of the
LLM (no model is needed; the same seed gives the same cases byte for byte):

1. pick a candidate answer a* from the database (places, their attributes, their notes);
2. verify with the data-engine toolset (Table 8: full records with memory, `social_mem`
   filters, `multi_stop_routing`) that a* is the only answer the query admits — the calls are
   kept as `engine_path`;
3. write the reference tool path τ* in the *standard* toolset (Table 7), the path an evaluated
   agent can walk: it is run while the case is built, so every call in it works, and replaying it
   (`replay`) shows the answer (`check_case`);
4. phrase the query from templates with varied personas, stating explicit requirements (L1) or
   implying preferences (L2) that make τ* necessary.

Each case carries the Table 5 answer with the Table 6 fields, τ*, the identities IG requires
(`evidence`), `implicit_logic`, the explicit attribute requirements A checks (`requirements`)
and the constraints SC checks (`constraints`), both evaluated by `scoring/judging.py`.

Routing and Trip cases get their order and totals from `multi_stop_routing`. Trip cases follow
Figure 10's Scenario B where they can: fixed start and end, and constraints (opening hours on
arrival given a departure time and a stay per stop, or an order dependency) that rule out the
unconstrained optimum, so the reference is the best order that meets them.

Modules: `case` (the record, Table 4), `city_index` (the engine's view of the city), the shared
steps as layered mixins — `choosing` (seeded draws, candidate geometry), `verifying` (data-engine
uniqueness checks, evidence notes), `reference_path` (τ* and the steps that write it), `routes`
(orders and route answers) — one module per task family (`place`, `nearby`, `routing`, `trip`),
`wording` (how a query lists names), `check` (`check_case`) and `engine` (`CaseEngine`, which
combines the families, and the case file format). Trip timing is `tools.trip_timing`,
shared with the judge and the baseline.
"""
