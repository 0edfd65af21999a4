"""Offline agents served as Inspect model providers (`geoeval/<agent>`)."""
