import os
import re
import subprocess
import sys
from glob import glob

from setuptools import find_packages, setup
from setuptools.command.install import install

package_name = "robot_linearization"
# the version is written once, in the package (robot_linearization.__version__); package.xml repeats it
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), package_name, "__init__.py")) as init:
    version = re.search(r'^__version__ = "([^"]+)"', init.read(), re.M).group(1)


class InstallAndPrecompile(install):
    """`setup.py install` (what colcon build runs), then the kernels compiled into the
    installed package's cache (robot_linearization/precompile.py), so that the node's
    first start is a warm one.  Skipped when installing into a staging root (pip
    building a wheel: the cache must be made where the package finally lives; pip
    users run `python -m robot_linearization.precompile`, scripts/venv.sh does), or
    with ROBOT_LINEARIZATION_PRECOMPILE=0.  A failure only warns."""

    def run(self):
        super().run()
        if self.root or os.environ.get("ROBOT_LINEARIZATION_PRECOMPILE", "1") == "0":
            return
        environment = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [self.install_lib] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        print("compiling robot_linearization's kernels into the installation (about a minute, once) ...")
        # run from the installation: `-m` puts the working directory (the sources) first on sys.path
        subprocess.call([sys.executable, "-m", f"{package_name}.precompile"], env=environment, cwd=self.install_lib)


setup(
    name=package_name,
    version=version,
    packages=find_packages(exclude=["test", "test.*"]),
    py_modules=["robot_linearization_rqt"],  # rqt's entry to the view (plugin.xml)
    package_data={package_name: ["py.typed", "robots/*.urdf", "codegen/*.c"]},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml", "plugin.xml"]),
        # the interfaces' definitions, read as text without ROS (robot_linearization/ros/interfaces.py)
        ("share/" + package_name + "/msg", glob("msg/*.msg")),
        ("share/" + package_name + "/srv", glob("srv/*.srv")),
        ("share/" + package_name + "/launch", glob("launch/*.py")),
        ("share/" + package_name + "/config", glob("config/*.yaml")),
        ("share/" + package_name + "/urdf", glob(package_name + "/robots/*.urdf")),
    ],
    python_requires=">=3.10",
    install_requires=["setuptools", "numpy>=1.24", "scipy>=1.10", "numba>=0.58", "urdf-parser-py>=0.0.4",
                      "rosbags>=0.9", "matplotlib>=3.6"],
    # walking/mpc.py's QP solvers, and threadpoolctl to hold numpy's BLAS to the controller's core
    extras_require={"mpc": ["proxsuite>=0.6", "osqp>=1.0", "daqp>=0.11", "threadpoolctl>=3.1"],
                    # walking/mujoco_plant.py: MuJoCo as the plant the MPC walks on
                    "mujoco": ["mujoco>=3.2"],
                    # (pytest-xdist: scripts/test.sh runs the suite on the machine's cores)
                    "test": ["pytest>=7", "pytest-xdist>=3.0", "mypy>=1.11", "example-robot-data>=4.1",
                             "proxsuite>=0.6", "osqp>=1.0", "daqp>=0.11", "threadpoolctl>=3.1", "mujoco>=3.2",
                             # Crocoddyl 3.2.1 (the step oracle) is built against libpinocchio 4.0.0
                             "pin==4.0.0", "crocoddyl==3.2.1", "mim-solvers>=0.3",  # CSQP: bench/mpc.py's anchor
                             # the rqt view's widgets, tested offscreen without ROS (rqt itself uses PyQt5)
                             "PySide6-Essentials>=6.5",
                             # the reference manual is built by the tests (test_manual.py)
                             "sphinx>=7.2", "myst-parser>=2",
                             # replay_bag's tasks on a LocalCluster (test_fleet.py)
                             "dask[distributed]>=2023.1"],
                    "docs": ["sphinx>=7.2", "myst-parser>=2"]},
    zip_safe=False,  # the compiled kernels are cached beside the installed sources
    cmdclass={"install": InstallAndPrecompile},
    maintainer="robot_linearization developers",
    maintainer_email="robot-linearization@example.invalid",
    description="Singularity-free geometric linearization (A, B, M^-1) of floating-base robot dynamics for ROS 2",
    license="BSD-3-Clause",
    entry_points={
        "console_scripts": [
            "robot-linearization = robot_linearization.cli:main",
            "linearization_node = robot_linearization.ros.programs:linearization_node",
            "simulated_robot = robot_linearization.ros.programs:simulated_robot",
            "mujoco_robot = robot_linearization.ros.programs:mujoco_robot",
            "walking_controller = robot_linearization.ros.programs:walking_controller",
        ],
    },
)
