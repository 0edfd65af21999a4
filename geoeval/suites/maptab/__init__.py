"""MapTab: route planning and diagnostic QA over metro / scenic-area maps plus attribute tables."""
