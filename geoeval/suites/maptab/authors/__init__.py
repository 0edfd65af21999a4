"""The authors' released MapTab files: the release layout both ways (`format`) and the `maptab_authors` environment (`env`)."""
