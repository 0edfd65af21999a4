"""Instance generation (section 3.1): the city's POIs, behaviour chains, expected calls and their responses, reference answers, coverage tables and the generator (`generator`)."""
