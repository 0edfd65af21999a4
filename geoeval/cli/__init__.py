"""Every `geoeval ...` command: the Hydra run (`app`), results, compare, data, cache and meta-eval; thin over the core (`main` dispatches)."""
