from glob import glob

from setuptools import find_packages, setup

package_name = "robot_linearization"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    package_data={package_name: ["robots/*.urdf"]},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob("launch/*.py")),
        ("share/" + package_name + "/config", glob("config/*.yaml")),
        ("share/" + package_name + "/urdf", glob(package_name + "/robots/*.urdf")),
    ],
    python_requires=">=3.10",
    install_requires=["setuptools", "numpy>=1.24", "scipy>=1.10", "numba>=0.58", "urdf-parser-py>=0.0.4",
                      "rosbags>=0.9", "matplotlib>=3.6"],
    extras_require={"test": ["pytest>=7", "example-robot-data>=4.1",
                             # Crocoddyl 3.2.1 (the step oracle) is built against libpinocchio 4.0.0
                             "pin==4.0.0", "crocoddyl==3.2.1"]},
    zip_safe=True,
    maintainer="robot_linearization developers",
    maintainer_email="robot-linearization@example.invalid",
    description="Singularity-free geometric linearization (A, B, M^-1) of floating-base robot dynamics for ROS 2",
    license="BSD-3-Clause",
    entry_points={
        "console_scripts": [
            "robot-linearization = robot_linearization.cli:main",
            "linearization_node = robot_linearization.ros.node:main",
            "simulated_robot = robot_linearization.ros.sim_node:main",
        ],
    },
)
