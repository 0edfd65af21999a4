"""Package list for setuptools: everything under geoeval/, plus the top-level conf/ folder shipped
as the package `geoeval.conf` (Hydra's `pkg://geoeval.conf`)."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["geoeval", "geoeval.*"]) + ["geoeval.conf"],
    package_dir={"geoeval.conf": "conf"},
)
