"""What a user typing commands meets: xacro given for URDF, the ROS 2 programs without
ROS 2, --version, and one-line errors (exit 2) for what the user got wrong."""

import logging
import subprocess
import sys

import pytest

import robot_linearization as rl
from robot_linearization.cli import main
from robot_linearization.robots import bundled_urdf_path

XACRO = """<?xml version="1.0"?>
<robot name="arm" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:property name="length" value="0.5"/>
  <link name="base"/>
  <link name="upper"><inertial><mass value="1"/><origin xyz="0 0 ${length/2}"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/><axis xyz="0 1 0"/>
    <limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
</robot>
"""
PROCESSED = XACRO.replace('  <xacro:property name="length" value="0.5"/>\n', "").replace("${length/2}", "0.25")


def test_xacro_is_refused_with_the_command_that_makes_a_urdf(tmp_path):
    path = tmp_path / "arm.urdf.xacro"
    path.write_text(XACRO)
    with pytest.raises(rl.ModelError, match=r"^this is xacro: run `xacro .*arm\.urdf\.xacro > arm\.urdf` first$"):
        rl.load_urdf(path)
    with pytest.raises(rl.ModelError, match=r"^this is xacro: run `xacro robot\.urdf\.xacro > robot\.urdf` first$"):
        rl.load_urdf(XACRO)
    only_an_expression = XACRO.replace('  <xacro:property name="length" value="0.5"/>\n', "")
    with pytest.raises(rl.ModelError, match="this is xacro"):
        rl.load_urdf(only_an_expression)
    # xacro's output keeps the xmlns:xacro declaration; a comment may mention ${...}
    assert rl.load_urdf(PROCESSED.replace("<link name=\"base\"/>", "<!-- from ${arm}.xacro --><link name=\"base\"/>"),
                       floating_base=False).n_joints == 1


def test_the_cli_says_the_same_for_xacro_in_one_line(tmp_path, capsys):
    path = tmp_path / "arm.urdf.xacro"
    path.write_text(XACRO)
    assert main(["demo", "--urdf", str(path), "--output-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == f"error: this is xacro: run `xacro {path} > arm.urdf` first\n"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("program", ["linearization_node", "simulated_robot"])
def test_the_ros_programs_without_rclpy_say_what_to_source_in_one_line(program, tmp_path):
    """As on a machine without ROS 2 (rclpy made unimportable, whatever this one has); run
    from an empty directory, so that `-c` imports the package these tests import."""
    code = (f"import sys; sys.modules['rclpy'] = None; sys.argv = ['{program}', '--help']\n"
            f"from robot_linearization.ros.programs import {program}\nsys.exit({program}())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"{program}: needs ROS 2 (rclpy): source /opt/ros/<distro>/setup.bash first\n"


def test_version_names_the_release_and_the_copy_that_runs(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out == f"robot-linearization {rl.__version__} ({rl.__path__[0]})\n"


BAD_URDF = '<robot name="r"><link name="a"/><joint name="j" type="revolute"><parent link="a"/><child link="b"/>' \
           '</joint></robot>'


@pytest.mark.parametrize("arguments, message", [
    (["demo", "--contacts", "paw"], "error: contact frame 'paw' is not a link of model 'rl_quadruped'"),
    (["demo", "--urdf", "{bad}"], "error: joint 'j' refers to link 'b', which does not exist"),
    (["demo", "--urdf", "{missing}"], "error: cannot read URDF file '{missing}': No such file or directory"),
    (["replay", "{missing}"], "error: no bag at {missing}"),
    (["replay", "{bag}", "--urdf", "{bad}"], "error: robot description rejected: joint 'j' refers to link 'b'"),
    (["replay", "{bag}", "--contacts", "paw"], "error: contact frame 'paw' is not a link of model 'rl_quadruped'"),
])
def test_what_the_user_got_wrong_is_one_line_and_exit_2(arguments, message, tmp_path, capsys):
    from robot_linearization.ros.bag import write_simulation_bag
    from robot_linearization.ros.simulation import Simulation

    names = {"bad": tmp_path / "bad.urdf", "missing": tmp_path / "missing", "bag": tmp_path / "in"}
    names["bad"].write_text(BAD_URDF)
    if "{bag}" in arguments:
        urdf = open(bundled_urdf_path()).read()
        write_simulation_bag(names["bag"], Simulation(rl.load_urdf(urdf), dt=0.01), urdf, 0.02)
    arguments = [a.format(**names) for a in arguments]
    arguments += ["--output-dir", str(tmp_path / "out")] if arguments[0] == "demo" else ["-o", str(tmp_path / "out")]
    assert main(arguments) == 2
    err = capsys.readouterr().err
    assert err.startswith(message.format(**names)) and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("checkout", [True, False])
def test_the_first_compile_message_gives_the_measured_time_and_says_when_it_compiles_into_a_checkout(
        checkout, tmp_path, monkeypatch, caplog):
    """A `.venv/bin/python` started in the clone imports its sources, not the installed,
    precompiled package: the message says so (measured times: compiled.FIRST_COMPILE_SECONDS)."""
    from types import SimpleNamespace

    from robot_linearization import compiled

    package = tmp_path / "robot_linearization"
    package.mkdir()
    if checkout:
        (tmp_path / "setup.py").write_text("")
    monkeypatch.setattr(compiled, "__file__", str(package / "compiled.py"))
    monkeypatch.setattr(compiled, "_said", False)
    monkeypatch.setattr(compiled, "_checked", set())
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    def never_compiled():
        pass
    never_compiled._cache = SimpleNamespace(_cache_file=SimpleNamespace(_index_path=str(tmp_path / "absent.nbi")))
    caplog.set_level(logging.WARNING, logger="robot_linearization")  # (whatever an earlier test left it at)
    compiled.announce_compilation(never_compiled)
    compiled.announce_compilation(never_compiled)
    (record,) = caplog.records
    assert "takes about 40 s before the first result (60 s with contacts)" in record.getMessage()
    assert (f"imported the package from the source checkout {tmp_path}" in record.getMessage()) == checkout


def test_the_cache_command_lists_the_generated_kernels_and_clears_only_them(tmp_path, monkeypatch, capsys):
    """`robot-linearization cache list` names each kernel's robot, what it computes and its size;
    `cache clear` removes those files and leaves anything else in the directory."""
    from robot_linearization import codegen

    if codegen.c_compiler() is None:
        pytest.skip("no C compiler here (CC, cc, gcc): no kernel can be generated to list")
    cache = tmp_path / "cache"
    monkeypatch.setenv("ROBOT_LINEARIZATION_CACHE_DIR", str(cache))
    assert main(["cache", "list"]) == 0
    assert capsys.readouterr().out == f"no generated kernels in {cache}\n"
    model = rl.load_urdf(bundled_urdf_path())
    impact_map = rl.ImpactMap(model, rl.robots.BUNDLED_FEET[:2], kernel="generated")
    assert impact_map.kernel == "generated"
    (cache / "notes.txt").write_text("the user's")
    assert main(["cache", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("rl_quadruped: the impact map of model 'rl_quadruped' on 2 contacts, ")
    assert " operations, " in lines[0] and "KiB" in lines[0] and lines[-1].startswith("1 kernels, ")
    assert " µs a call" not in lines[0]  # (built in this process: not timed)
    codegen.build.record_timing(model, impact_map.contacts, "impact", {"generated_us": 6.25, "generic_us": 11.5})
    assert main(["cache", "list"]) == 0
    assert ", 6.2 µs a call against the generic 11.5  (" in capsys.readouterr().out.splitlines()[0]
    for name in ("background.lock", "background-1.lock", "background-old.lock"):  # (two build slots', a user's)
        (cache / name).touch()
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out.startswith("removed 5 files (")
    assert sorted(p.name for p in cache.iterdir()) == ["background-old.lock", "notes.txt"]
    with pytest.raises(SystemExit):
        main(["cache", "remove"])
    assert "invalid choice: 'remove'" in capsys.readouterr().err
