"""geoeval config groups (Hydra). Shipped as the package `geoeval.conf`."""
