"""The reading side of MapTab's offline baselines: what an agent recovers from the prompts the
suite writes (`prompt_reading`) and how a pure table reader answers from them (`table_reader`).
The policies that use them are registered in `maptab.agents`; question generation never imports
this package."""
