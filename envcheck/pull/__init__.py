"""Pull an image through the engine, carefully: checks before, retries during, proof after.

This folder is the I/O. What to pull — the tag, its mirrors and the matrix's pin — and what a pull
gives is pure (`envcheck.image.pull_plan`); the engine's pull events, folded into progress, are a
contract (`envcheck.contracts.pull_events`).

- `run`: one pull — the registry read and checks before, the engine's stream with retries and
  the mirror during, the digest proven after.
- `images`: what the engine already holds (by name or digest), and removing a name again.
- `ensure`: the smoke's entry point — the image if present, else pulled.
"""
