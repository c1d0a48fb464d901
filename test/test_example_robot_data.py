"""The walkers of example-robot-data (walking/robots.py) are found in whichever release is installed: one
with its ``example_robot_data`` module (up to 5.0, or with example-robot-data-loaders), or 6.0, which ships
the robots without the module; and an error says what is really missing.

scripts/test.sh also runs this module, and the walking example, in a virtualenv holding the newest
example-robot-data alone (no crocoddyl, no loaders: $ROBOT_LINEARIZATION_TEST_DATA_ALONE set), where the
module must be absent."""

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import robot_linearization
from robot_linearization.walking import robots
from robot_linearization.walking.robots import walker

DATA_ALONE = bool(os.environ.get("ROBOT_LINEARIZATION_TEST_DATA_ALONE"))
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
WALKERS = [name for name in robots.WALKERS if name != "bundled"]


def test_the_environment_is_the_one_it_says():
    if DATA_ALONE:  # (else this module would prove nothing of the release without the module)
        assert importlib.util.find_spec("example_robot_data") is None
        assert int(importlib.metadata.version("example-robot-data").split(".")[0]) >= 6


@pytest.mark.parametrize("name", WALKERS)
def test_a_walker_is_found_with_or_without_the_module_and_is_the_same_robot(name, monkeypatch):
    found = walker(name)
    assert os.path.isfile(found.urdf) and found.model.n_joints in (12, 32) and found.posture
    monkeypatch.setitem(sys.modules, "example_robot_data", None)  # (as where 6.0 is installed alone)
    alone = walker(name)
    assert os.path.samefile(alone.urdf, found.urdf)
    assert os.path.realpath(alone.urdf).endswith(os.path.join(*robots.ROBOTS_SHARE, robots._EXAMPLE_ROBOTS[name][0]))
    assert alone.posture == found.posture and alone.feet == found.feet
    assert alone.model.joint_names == found.model.joint_names


def test_what_is_missing_is_said_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "example_robot_data", None)
    monkeypatch.setitem(robots._EXAMPLE_ROBOTS, "solo12", ("solo_description/robots/solo13.urdf",
                                                          *robots._EXAMPLE_ROBOTS["solo12"][1:]))
    version = importlib.metadata.version("example-robot-data")
    with pytest.raises(ImportError, match=rf"^robot 'solo12': example-robot-data {version} is installed but has no "
                                          r"solo_description/robots/solo13.urdf in .*robots$"):
        walker("solo12")

    def absent(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", absent)
    with pytest.raises(ImportError, match=r"^robot 'solo12' comes from example-robot-data, which is not "
                                          r"installed: pip install example-robot-data$"):
        walker("solo12")


@pytest.mark.parametrize("name", ["solo12", "talos"])
def test_the_walking_example_starts_on_an_example_robot(name, tmp_path):
    """examples/mpc_trot.py --robot NAME walks its first 0.3 s (in the data-alone environment: where it
    could not start at all before)."""
    package_root = str(Path(robot_linearization.__file__).resolve().parent.parent)  # the one under test
    done = subprocess.run([sys.executable, str(EXAMPLES / "mpc_trot.py"), str(tmp_path / "walk.png"), "--robot", name,
                           "--seconds", "0.3"], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": package_root})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "walked 0.30 s" in done.stdout and (tmp_path / "walk.png").is_file()
