"""geoeval: an evaluation service for LLM agents that work on maps."""

__version__ = "0.1.0"
