"""Sweeps: geoeval's Hydra launcher, the fan-out to worker processes, each job's point and run name, the progress line, and one composition per job."""
