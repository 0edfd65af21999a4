"""Tests of the LifePlanner suite (environment, tools, metrics)."""
