"""The user of a dialogue: generated profiles with behaviour statistics (`model`) and the simulated user (`simulator`)."""
