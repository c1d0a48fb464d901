"""The node's ~/validate in a process of its own (ros/validation_process.py): the same report as
rl.validate in the caller, the work done in a lower-priority process that ignores Ctrl-C, a worker
that dies said in one line and replaced at the next call, its answers apart from what it prints."""

import dataclasses
import os
import signal
import time

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization.robots import bundled_urdf_path
from robot_linearization.ros.validation_process import WORKER_NICENESS, ValidationError, ValidationProcess

from conftest import example_robot_path

MODEL = rl.load_urdf(bundled_urdf_path())


@pytest.fixture
def process():
    validation = ValidationProcess()
    yield validation
    validation.close()


def random_state(model, rng):
    return rl.State(base_pose=rl.spatial.se3_exp(rng.normal(size=6)), joint_positions=rng.normal(size=model.n_joints),
                    base_twist=rng.normal(size=6), joint_velocities=rng.normal(size=model.n_joints))


def test_the_process_reports_what_rl_validate_reports_free_on_contacts_and_of_a_wrong_linearization(process):
    rng = np.random.default_rng(3)
    free = rl.linearize(MODEL, random_state(MODEL, rng), rng.normal(size=12))
    feet = rl.linearize(MODEL, random_state(MODEL, rng), rng.normal(size=12),
                        contacts=["front_left_foot", "front_right_foot", "hind_left_foot", "hind_right_foot"])
    wrong = dataclasses.replace(free, A=free.A + 1e-3 * np.eye(free.A.shape[0]))
    for lin in (free, feet, wrong):
        report, here = process.validate(MODEL, lin), rl.validate(MODEL, lin)
        assert report.blocks == here.blocks  # (every block's name and errors, bit for bit)
    assert len(feet.contacts) == 4 and "lambda" in [b.name for b in process.validate(MODEL, feet).blocks]
    assert process.validate(MODEL, free).passed(1e-6) and not process.validate(MODEL, wrong).passed(1e-6)


def test_the_validation_runs_in_one_lower_priority_process_and_costs_the_caller_no_cpu(process):
    talos = rl.load_urdf(example_robot_path("talos"))
    rng = np.random.default_rng(4)
    lin = rl.linearize(talos, random_state(talos, rng), rng.normal(size=talos.n_joints))
    assert process.pid is None
    report = process.validate(talos, lin)
    worker = process.pid
    assert worker is not None and worker != os.getpid()
    assert os.getpriority(os.PRIO_PROCESS, worker) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + WORKER_NICENESS)
    cpu = time.process_time()
    rl.validate(talos, lin)
    here = time.process_time() - cpu
    cpu = time.process_time()
    again = process.validate(talos, lin)
    there = time.process_time() - cpu
    assert process.pid == worker and again.blocks == report.blocks  # (the same worker, kept between calls)
    assert there < 0.2 * here, f"the caller spent {there:.3f} s of CPU on a validation that costs {here:.3f} s"


def test_a_dead_worker_is_said_in_one_line_and_replaced_and_ctrl_c_is_not_for_it(process):
    rng = np.random.default_rng(5)
    lin = rl.linearize(MODEL, random_state(MODEL, rng), rng.normal(size=12))
    process.validate(MODEL, lin)
    worker = process.pid
    os.kill(worker, signal.SIGINT)  # (a Ctrl-C in the node's terminal reaches its whole process group)
    assert process.validate(MODEL, lin).passed(1e-6) and process.pid == worker
    os.kill(worker, signal.SIGKILL)
    with pytest.raises(ValidationError) as error:
        process.validate(MODEL, lin)
    assert "\n" not in str(error.value) and "the next call starts another" in str(error.value)
    assert process.pid is None
    assert process.validate(MODEL, lin).passed(1e-6) and process.pid not in (None, worker)


def test_what_rl_validate_raises_is_raised_to_the_caller(process):
    talos = rl.load_urdf(example_robot_path("talos"))
    lin = rl.linearize(MODEL, random_state(MODEL, np.random.default_rng(7)))
    with pytest.raises(Exception) as in_the_caller:
        rl.validate(talos, lin)
    with pytest.raises(type(in_the_caller.value)) as through_the_process:
        process.validate(talos, lin)
    assert str(through_the_process.value) == str(in_the_caller.value)
    assert process.validate(MODEL, lin).passed(1e-6)  # (and the worker serves on)


def test_what_a_library_prints_in_the_worker_does_not_come_between_its_answers(process, tmp_path, monkeypatch, capfd):
    # (a module every Python of this environment imports at start-up: it prints, and writes to fd 1 itself)
    (tmp_path / "sitecustomize.py").write_text("import os\nprint('a library says hello')\n"
                                               "os.write(1, b'and writes to fd 1 itself\\n')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    rng = np.random.default_rng(8)
    lin = rl.linearize(MODEL, random_state(MODEL, rng), rng.normal(size=12))
    assert process.validate(MODEL, lin).passed(1e-6) and process.validate(MODEL, lin).passed(1e-6)
    printed = capfd.readouterr().out  # (the worker's stdout is the caller's: a node's log)
    assert "a library says hello" in printed and "and writes to fd 1 itself" in printed


def test_close_ends_the_worker():
    process = ValidationProcess()
    rng = np.random.default_rng(6)
    process.validate(MODEL, rl.linearize(MODEL, random_state(MODEL, rng), rng.normal(size=12)))
    worker = process.pid
    process.close()
    assert process.pid is None
    with pytest.raises(ProcessLookupError):  # (ended and reaped)
        os.kill(worker, 0)
    process.close()  # (twice: nothing left to end)
