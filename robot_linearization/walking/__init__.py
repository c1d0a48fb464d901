"""Walking on the linearization: a flat ground for the simulation (ground.py) and a linear
time-varying whole-body MPC that trots on it (mpc.py)."""
