"""Walking on the linearization: a flat ground for the simulation (ground.py), a linear
time-varying whole-body MPC that walks on it (mpc.py) with settings in the robot's own units
(scale.py), the robots the examples walk (robots.py) and the scenario that runs them
(scenario.py)."""
