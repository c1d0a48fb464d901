"""The demo walks: the bundled quadruped trots in place (gait.py) on a flat ground, z = 0; a
scheduled foot closes its contact once it is on the ground, the simulation applies the rigid
impact at every touchdown (rl.impact, docs/impacts.md), and the set held reaches the node's
pipeline on /contacts.  The physics is checked independently, with Pinocchio's kinematics and
mass matrix."""

import os
import subprocess
import sys

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization.cli import DEMO_OUTPUTS
from robot_linearization.gait import TROT, Gait, Phase, gait_for
from robot_linearization.ros.parameters import simulation_settings
from robot_linearization.ros.simulation import Simulation
from robot_linearization.walking.ground import standing_feet

from conftest import PinocchioOracle

FEET = list(rl.robots.BUNDLED_FEET)
PAIR_A, PAIR_B = "front_left_foot, hind_right_foot", "front_right_foot, hind_left_foot"
FOUR = ", ".join(FEET)


@pytest.fixture(scope="module")
def quadruped():
    return rl.load_urdf(rl.robots.bundled_urdf_path())


@pytest.fixture(scope="module")
def trot(quadruped):
    """1.5 s of the trot at 2 ms: the states it reported, and the simulation (its touchdowns)."""
    simulation = Simulation(quadruped, dt=0.002, gait=TROT)
    states = [simulation.step()[0] for _ in range(750)]
    return simulation, states


def _feet_motion(oracle, state):
    """(positions (4, 3), velocities (4, 3)) of the four feet in the world, and ½νᵀMν, by Pinocchio."""
    pin = oracle.pin
    nu = np.concatenate([state.base_twist, state.joint_velocities])
    v = np.zeros(oracle.pmodel.nv)
    v[oracle.perm] = nu
    q = oracle.configuration(state)
    pin.forwardKinematics(oracle.pmodel, oracle.data, q, v)
    pin.updateFramePlacements(oracle.pmodel, oracle.data)
    ids = [oracle.pmodel.getFrameId(f) for f in FEET]
    positions = np.array([oracle.data.oMf[i].translation for i in ids])
    velocities = np.array([pin.getFrameVelocity(oracle.pmodel, oracle.data, i, pin.LOCAL_WORLD_ALIGNED).linear
                           for i in ids])
    M = pin.crba(oracle.pmodel, oracle.data, q)
    M = np.triu(M) + np.triu(M, 1).T
    return positions, velocities, 0.5 * v @ M @ v


def test_the_trot_follows_its_schedule(trot):
    simulation, _ = trot
    assert [round(t.time, 6) for t in simulation.touchdowns] == [0.35, 0.7, 1.05, 1.4]
    landed = [sorted({c.frame for c in t.impact.contacts} - {c.frame for c in t.previous_contacts})
              for t in simulation.touchdowns]
    assert landed == [["front_right_foot", "hind_left_foot"], ["front_left_foot", "hind_right_foot"]] * 2
    assert all(len(t.impact.contacts) == 4 for t in simulation.touchdowns)  # the impact acts on the whole new set


@pytest.mark.parametrize("gait", [TROT, Gait.walk(("left", "right"), period=1.6, support=0.3),
                                  Gait.stand(FEET, period=0.5)], ids=lambda gait: gait.name)
def test_the_phases_at_many_times_are_those_at_each(gait):
    """Gait.phases_at(times) gives, at once, Gait.phase_at's phase and fraction at each time: over three
    periods on either side of zero, on a grid and at random, and 2, 0.5 and 0 ns around each boundary (a time
    within 1 ns before one belongs to the phase that starts there)."""
    ends = np.cumsum([p.duration for p in gait.phases])
    boundaries = np.add.outer(np.arange(-3, 4) * gait.period, np.r_[0.0, ends]).ravel()
    times = np.concatenate([np.arange(-3.0, 4.0, 0.001), np.random.default_rng(2).uniform(-3.0, 4.0, 2000),
                            np.add.outer(boundaries, [-2e-9, -5e-10, 0.0, 5e-10, 2e-9]).ravel()])
    index, fraction = gait.phases_at(times)
    expected = [gait.phase_at(t) for t in times]
    assert [gait.phases[i] is phase for i, (phase, _) in zip(index, expected)] == [True] * len(times)
    np.testing.assert_allclose(fraction, [f for _, f in expected], rtol=0, atol=1e-12)
    assert len(set(index.tolist())) == len(gait.phases)



def test_the_phases_at_times_of_any_layout_or_not_a_number_are_phase_ats_and_other_times_are_refused():
    """float32, strided, read-only times give the phases of their float64 copies; a time that is not a number
    phase_at's first phase at its start; times that are not a 1-D array of real numbers: one line naming them."""
    times = np.linspace(-1.0, 2.0, 31)
    index, fraction = TROT.phases_at(times)
    frozen = times.copy()
    frozen.flags.writeable = False
    for given in (np.repeat(times, 2)[::2], frozen, times.astype(">f8")):
        np.testing.assert_array_equal(TROT.phases_at(given)[0], index)
        np.testing.assert_array_equal(TROT.phases_at(given)[1], fraction)
    np.testing.assert_array_equal(TROT.phases_at(times.astype(np.float32))[0][::5], index[::5])
    got = TROT.phases_at(np.array([np.nan, np.inf, 0.1]))
    assert [TROT.phases[i] for i in got[0]] == [TROT.phase_at(t)[0] for t in (np.nan, np.inf, 0.1)]
    assert got[1].tolist()[:2] == [0.0, 0.0] and np.isfinite(got[1]).all()
    for bad in (np.zeros((2, 2)), "0.1", ["a"], None):
        with pytest.raises(ValueError, match="^times: expected") as raised:
            TROT.phases_at(bad)
        assert "\n" not in str(raised.value)


def test_every_touchdown_stops_the_new_feet_at_once_and_loses_kinetic_energy(quadruped, trot):
    simulation, states = trot
    oracle = PinocchioOracle(rl.robots.bundled_urdf_path(), quadruped)
    for touchdown in simulation.touchdowns:
        k = int(round(touchdown.time / simulation.dt))
        assert states[k] is touchdown.impact.pre_impact_state  # the state reported at that instant: x⁻
        landing = [FEET.index(c.frame) for c in touchdown.impact.contacts if c not in touchdown.previous_contacts]
        before, v_before, energy_before = _feet_motion(oracle, states[k])
        _, v_after, energy_after = _feet_motion(oracle, touchdown.impact.state)
        assert np.abs(v_before[landing, 2]).min() > 0.3  # the feet come down fast: a real impact
        assert np.abs(v_after).max() <= 1e-10  # J ν⁺ = 0 on every foot of the new set
        assert energy_after <= energy_before
        assert energy_after < 0.95 * energy_before
        # and the simulation went on from x⁺: the landing feet stay where they touched down (within
        # the constrained step's O(dt²)), not carried on by their speed, dt·|v⁻| ≈ 1.5 mm
        after, _, _ = _feet_motion(oracle, states[k + 1])
        assert np.abs(after[landing] - before[landing]).max() < 1e-5


def test_the_trot_stays_up_and_level_at_the_largest_demo_step(quadruped):
    simulation = Simulation(quadruped, dt=0.01, gait=TROT)
    states = [simulation.step()[0] for _ in range(500)]  # 5 s, 14 touchdowns
    heights = np.array([s.base_pose[2, 3] for s in states])
    tilts = [np.arccos(min(1.0, s.base_pose[2, 2])) for s in states]
    assert len(simulation.touchdowns) == 14 and np.abs(heights - heights[0]).max() < 0.01 and max(tilts) < 0.01


@pytest.mark.parametrize("dt, tolerance", [(0.002, 0.25e-3), (0.01, 0.25e-3)])
def test_the_trot_walks_on_the_ground(quadruped, dt, tolerance):
    """It starts at rest on its four feet on z = 0; every held foot stays on the ground, every
    swinging one above it, and each closes its contact on the ground at its scheduled instant:
    within 0.25 mm at the demo's 2 ms step and at its largest of 10 ms (the feet's height by
    Pinocchio's kinematics; ≈ 0.1 mm, simulation.SWING_LAG)."""
    oracle = PinocchioOracle(rl.robots.bundled_urdf_path(), quadruped)
    simulation = Simulation(quadruped, dt=dt, gait=TROT)
    assert np.abs(_feet_motion(oracle, simulation.state)[0][:, 2]).max() < 1e-12
    assert simulation.state.base_pose[2, 3] > 0.25  # the base above its feet, not at the origin
    held_heights, free_heights = [], []
    for _ in range(int(round(2.12 / dt))):
        simulation.step()
        held = {c.frame for c in simulation.contacts}
        heights = _feet_motion(oracle, simulation.state)[0][:, 2]
        held_heights += [heights[k] for k, foot in enumerate(FEET) if foot in held]
        free_heights += [heights[k] for k, foot in enumerate(FEET) if foot not in held]
    assert np.abs(held_heights).max() < tolerance
    assert min(free_heights) > -tolerance and max(free_heights) > 0.05  # lifted ≈ 6 cm
    assert [round(t.time, 6) for t in simulation.touchdowns] == [0.35, 0.7, 1.05, 1.4, 1.75, 2.1]
    for touchdown in simulation.touchdowns:
        landing = [FEET.index(c.frame) for c in touchdown.impact.contacts if c not in touchdown.previous_contacts]
        assert np.abs(_feet_motion(oracle, touchdown.impact.pre_impact_state)[0][landing, 2]).max() < tolerance


def test_a_late_foot_stays_free_until_it_reaches_the_ground_then_closes_on_it(quadruped, monkeypatch):
    """The swing paths end 4 mm above the ground: at the scheduled instant (0.35 s) the landing
    feet are still in the air, so they stay free (the others hold) and go on down; each closes its
    contact, with the impact, once it is within 1 mm of the ground — within 1 mm by Pinocchio's
    kinematics, a few steps late."""
    oracle = PinocchioOracle(rl.robots.bundled_urdf_path(), quadruped)
    swing_target = Simulation.swing_target

    def ending_above_the_ground(self, foot):
        position, velocity, acceleration = swing_target(self, foot)
        _, lifted, duration = self._swings[foot]
        if self.time - lifted <= duration:
            position = position + np.array([0.0, 0.0, 0.004])
        return position, velocity, acceleration

    monkeypatch.setattr(Simulation, "swing_target", ending_above_the_ground)
    simulation = Simulation(quadruped, dt=0.002, gait=TROT)
    held_after_the_instant = []
    while simulation.time < 0.45:
        simulation.step()
        if 0.35 <= simulation.time - simulation.dt < 0.36:
            held_after_the_instant.append({c.frame for c in simulation.contacts})
    assert set(PAIR_A.split(", ")) == held_after_the_instant[0]  # the landing pair is late: only the other holds
    late = [t for t in simulation.touchdowns if t.time >= 0.35 - 1e-9]
    assert late and all(0.35 < t.time < 0.37 for t in late)
    landed = set()
    for touchdown in late:
        new = [FEET.index(c.frame) for c in touchdown.impact.contacts if c not in touchdown.previous_contacts]
        landed |= {FEET[k] for k in new}
        heights = _feet_motion(oracle, touchdown.impact.pre_impact_state)[0][new, 2]
        assert np.abs(heights).max() <= 1e-3, heights
    assert landed == set(PAIR_B.split(", "))


def test_a_scheduled_foot_above_the_ground_stays_free_until_it_is_on_it():
    """walking/ground.standing_feet, shared by the demo's simulation and the MPC's ground: a foot
    stands when the schedule names it and it is held already or within the tolerance of the ground."""
    heights = {"a": 0.0, "b": 0.004, "c": -0.002, "d": 0.004}
    assert standing_feet("abcd", {"a", "b", "c"}, set(), heights, 1e-3) == ("a", "c")
    assert standing_feet("abcd", {"a", "b", "c"}, {"b"}, heights, 1e-3) == ("a", "b", "c")  # held: stays
    assert standing_feet("abcd", {"a"}, {"b", "d"}, heights, 1e-3) == ("a",)  # not scheduled: lifts off


def test_the_schedule_is_on_the_bags_contacts_topic_and_the_replay_follows_it(quadruped, tmp_path):
    from rosbags.highlevel import AnyReader

    from robot_linearization.ros.bag import replay, write_simulation_bag
    from robot_linearization.ros.interfaces import typestore_with_interfaces
    from robot_linearization.ros.pipeline import PipelineConfig

    urdf = open(rl.robots.bundled_urdf_path()).read()
    write_simulation_bag(tmp_path / "in", Simulation(quadruped, dt=0.01, gait=TROT), urdf, 0.9)
    with AnyReader([tmp_path / "in"]) as reader:
        schedule = [(t, reader.deserialize(raw, c.msgtype).data)
                    for c, t, raw in reader.messages([c for c in reader.connections if c.topic == "/contacts"])]
        joint_states = [t for c, t, _ in reader.messages([c for c in reader.connections
                                                         if c.topic == "/joint_states"])]
    start = 1_000_000_000
    assert schedule == [(start, FOUR), (start + 100_000_000, PAIR_A), (start + 350_000_000, FOUR),
                        (start + 450_000_000, PAIR_B), (start + 700_000_000, FOUR), (start + 800_000_000, PAIR_A)]
    assert all(t + 1 in joint_states for t, _ in schedule)  # each just before the first state held with it

    summary = replay(tmp_path / "in", tmp_path / "out", progress=False, contacts_topic="/contacts",
                     config=PipelineConfig(use_effort=True, contacts=TROT.contacts_at(0.0)))
    with AnyReader([tmp_path / "out"], default_typestore=typestore_with_interfaces()) as reader:
        sets = [tuple(reader.deserialize(raw, c.msgtype).contact_labels) for c, _, raw in reader.messages(
            [c for c in reader.connections if c.topic == "/robot_linearization/linearization"])]
    changes = [labels for k, labels in enumerate(sets) if k == 0 or labels != sets[k - 1]]
    assert len(changes) == 6 and [sum(label.endswith(":fz") for label in labels) for labels in changes] == [
        4, 2, 4, 2, 4, 2]
    assert summary.outputs == 90


def test_a_standing_simulation_records_no_schedule(quadruped, tmp_path):
    from rosbags.highlevel import AnyReader

    from robot_linearization.ros.bag import write_simulation_bag

    urdf = open(rl.robots.bundled_urdf_path()).read()
    write_simulation_bag(tmp_path / "in", Simulation(quadruped, dt=0.01, contacts=FEET), urdf, 0.5)
    with AnyReader([tmp_path / "in"]) as reader:
        assert "/contacts" not in reader.topics


def test_the_gait_is_the_bundled_quadrupeds_and_a_parameter_of_the_simulated_robot(quadruped):
    assert gait_for("none", quadruped) is None and gait_for("trot", quadruped) is TROT
    with pytest.raises(ValueError, match="cannot trot \\(its base is fixed\\)"):
        gait_for("trot", rl.load_urdf(rl.robots.bundled_urdf_path(), floating_base=False))
    with pytest.raises(ValueError, match="expected one of none, trot"):
        gait_for("gallop", quadruped)
    assert simulation_settings({}).gait == "none" and simulation_settings({"gait": "trot"}).gait == "trot"
    with pytest.raises(ValueError, match="parameter 'gait'"):
        simulation_settings({"gait": "gallop"})


def test_the_demo_trots_by_default_prints_pass_and_draws_a_touchdown_only_into_its_directory(tmp_path):
    command = [sys.executable, "-m", "robot_linearization", "demo", "--duration", "0.4", "--samples", "1",
               "--repeat", "1", "--heatmap-rate", "0", "--output-dir", "out"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.path.dirname(os.path.dirname(
        rl.__file__)), os.environ.get("PYTHONPATH")])))
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    verdicts = [line for line in run.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert len(verdicts) == 1 and verdicts[0].startswith("PASS"), run.stdout
    assert "the trot's schedule" in run.stdout and "1 touchdowns, the schedule on /contacts" in run.stdout
    assert "and of the step through the first touchdown" in run.stdout
    assert sorted(os.listdir(tmp_path)) == ["out"]
    assert sorted(os.listdir(tmp_path / "out")) == sorted(DEMO_OUTPUTS)
    assert (tmp_path / "out" / "touchdown.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("arguments, message", [
    (["--gait", "trot", "--contacts", "front_left_foot"], "error: --gait trot sets the contacts (its schedule)"),
    (["--gait", "trot", "--fixed-base"], "error: gait 'trot' is the bundled quadruped's"),
])
def test_a_gait_the_robot_cannot_walk_is_one_line_and_exit_2(arguments, message, tmp_path, capsys):
    from robot_linearization.cli import main

    assert main(["demo", "--output-dir", str(tmp_path / "out")] + arguments) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_the_gaits_of_any_legged_robot_are_made_from_its_feet():
    """Gait.trot, pace, walk, stand: each cycle's phases and who stands in them; TROT is the bundled robot's
    trot (0.1 s on four feet, 0.25 s on a diagonal pair)."""
    feet = ("fl", "fr", "hl", "hr")
    assert [(p.duration, p.stance) for p in Gait.trot(feet, period=0.8, support=0.1).phases] == [
        (0.1, feet), (0.3, ("fl", "hr")), (0.1, feet), (0.3, ("fr", "hl"))]
    assert [p.stance for p in Gait.pace(feet).phases] == [feet, ("fl", "hl"), feet, ("fr", "hr")]
    walk = Gait.walk(feet, period=1.2, support=0.1)
    assert [p.duration for p in walk.phases] == [0.1, 0.2] * 4 and walk.period == pytest.approx(1.2)
    lifted = [set(feet) - set(p.stance) for p in walk.phases[1::2]]
    assert lifted == [{"hl"}, {"fl"}, {"hr"}, {"fr"}]  # one foot at a time, hind before front
    biped = Gait.walk(("left", "right"), {"knee": 0.3}, period=1.0)
    assert [p.stance for p in biped.phases] == [("left", "right"), ("right",), ("left", "right"), ("left",)]
    assert biped.joint_posture(["knee", "hip"]).tolist() == [0.3, 0.0]
    assert Gait.stand(feet).phases == (Phase(1.0, feet),) and Gait.stand(feet).posture == {}
    assert [(p.duration, p.stance) for p in TROT.phases] == [
        (0.1, tuple(FEET)), (0.25, tuple(PAIR_A.split(", "))), (0.1, tuple(FEET)), (0.25, tuple(PAIR_B.split(", ")))]
    assert TROT.swing_duration("front_left_foot") == 0.25 and walk.swing_duration("fl") == 0.2


def test_a_gaits_own_feet_are_checked_also_when_other_feet_are_given(quadruped):
    """Gait.check(model, feet) with the MPC's feet: a foot misspelt in the gait itself is still named (else
    the MPC would never put that foot down)."""
    misspelt = Gait.trot(["front_left_foot", "front_rigth_foot", "hind_left_foot", "hind_right_foot"])
    with pytest.raises(ValueError, match=r"^gait 'trot': foot 'front_rigth_foot' is not a frame of model "
                                         r"'rl_quadruped'.*'front_right_foot'") as error:
        misspelt.check(quadruped, FEET)
    assert "\n" not in str(error.value)
    TROT.check(quadruped, FEET)  # (the same gait spelt right)


@pytest.mark.parametrize("gait, period, support", [("trot", 0.2, 0.1), ("pace", 0.4, 0.2), ("walk", 0.4, 0.1),
                                                   ("trot", 0.2, 0.15)])
def test_a_support_that_leaves_no_swing_is_refused_in_one_line(gait, period, support):
    """Exactly no swing (period = 2 × support in a trot) is refused, as a negative one is."""
    with pytest.raises(ValueError, match=rf"^support: {support:g} s on every foot leaves no time to swing") as error:
        getattr(Gait, gait)(FEET, period=period, support=support)
    assert "\n" not in str(error.value)
    assert getattr(Gait, gait)(FEET, period=period + 0.01, support=support / 2).phases[1].duration > 0


def test_the_ground_closes_on_a_foot_the_step_would_take_below_it_scheduled_or_not(quadruped):
    """The MPC's ground (walking/ground.py): at 0.2 s of the trot the pair front right + hind left swings,
    its feet just on the floor; the base sinking at 0.5 m/s would take them 1 mm below it in a step. They
    are held at once (an impact, a touchdown of feet the gait does not schedule), and stay held, on the
    floor, until they let go or their stance begins; no foot is ever below the floor by more than the
    tolerance."""
    from robot_linearization.walking.ground import GroundSimulation, standing_state

    state, _ = standing_state(quadruped, TROT, FEET)
    sinking = rl.State(base_pose=state.base_pose, joint_positions=state.joint_positions,
                       base_twist=np.r_[0.0, 0.0, -0.5, 0.0, 0.0, 0.0], joint_velocities=state.joint_velocities)
    simulation = GroundSimulation(quadruped, TROT, sinking, feet=FEET)
    simulation.time = 0.2  # (the pair A stands, B swings)
    swinging = set(PAIR_B.split(", "))
    assert set(simulation.held) == set(FEET)  # (standing_state: all on the floor, the gait's start)
    simulation.held = tuple(f for f in FEET if f not in swinging)
    assert swinging <= set(simulation.contacts_now())
    simulation.step(np.zeros(quadruped.n_joints))
    assert swinging <= set(simulation.held) and set(simulation.early) == swinging
    assert simulation.touchdowns == [(0.2, tuple(f for f in FEET if f in swinging))]
    heights = simulation.foot_heights()
    assert all(abs(heights[f]) <= simulation.tolerance for f in swinging)
    assert not [v for v in simulation.violations if v.what == "below the ground"]


def test_a_push_down_at_a_touchdown_leaves_no_foot_below_the_floor():
    """A push of 0.6 m/s downwards as the pair lands (1.05 s): the landing feet are closed before the step
    that would take them through the floor (before, one went 1.2 mm below it)."""
    from robot_linearization.walking.scenario import Push, Segment, trot

    log = trot(1.6, (Segment(0.0, (0.0, 0.0, 0.0)),), (Push(1.05, (0.0, 0.0, -0.6)),))
    assert log.error is None
    assert not [v for v in log.violations if v.what == "below the ground"]
    assert any(1.05 <= time < 1.07 for time, _ in log.touchdowns)
