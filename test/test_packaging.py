"""ROS 2 package hygiene: what the node imports is declared, what setup.py
installs exists, the launch files are valid Python."""

import ast
import py_compile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from robot_linearization.ros.parameters import PARAMETERS

ROOT = Path(__file__).resolve().parent.parent
ROS_PACKAGES = {"rclpy", "rcl_interfaces", "std_msgs", "sensor_msgs", "nav_msgs", "geometry_msgs", "std_srvs",
                "diagnostic_msgs", "builtin_interfaces", "launch", "launch_ros", "ament_index_python",
                "rqt_gui", "rqt_gui_py", "python_qt_binding"}
TEST_ROS_PACKAGES = {"launch_testing", "rosbag2_py", "rosidl_runtime_py"}


def _source_tree():
    if not (ROOT / "package.xml").exists():
        pytest.fail(f"run the tests from a checkout: {ROOT} has no package.xml")
    return ROOT


def _imported_packages(paths) -> set:
    imported = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module.split(".")[0])
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip"
                  and isinstance(node.args[0], ast.Constant)):
                imported.add(node.args[0].value.split(".")[0])
    return imported


def _depends(kind: str) -> set:
    """The packages of ``kind`` (exec_depend, test_depend, build_depend), <depend> counting as each."""
    root = ET.parse(_source_tree() / "package.xml").getroot()
    return {e.text for e in root.iter(kind)} | {e.text for e in root.iter("depend")}


def test_every_ros_package_the_tests_import_is_a_depend():
    imported = _imported_packages((_source_tree() / "test").glob("*.py"))
    ros_imports = imported & (ROS_PACKAGES | TEST_ROS_PACKAGES)
    assert {"rclpy", "launch_testing", "rosbag2_py"} <= ros_imports
    assert ros_imports <= _depends("exec_depend") | _depends("test_depend"), ros_imports


def test_every_ros_package_imported_is_an_exec_depend():
    root = _source_tree()
    depends = _depends("exec_depend")
    sources = list((root / "robot_linearization").rglob("*.py")) + list((root / "launch").glob("*.py"))
    imported = _imported_packages(sources)
    ros_imports = imported & ROS_PACKAGES
    assert ros_imports and ros_imports <= depends, ros_imports - depends
    # messages built by name (messages.py) need their packages too
    for package in ("std_msgs", "sensor_msgs", "nav_msgs", "geometry_msgs", "diagnostic_msgs", "std_srvs"):
        assert package in depends
    for python_dep in ("python3-numpy", "python3-scipy", "python3-numba", "urdfdom_py"):
        assert python_dep in depends


def test_every_package_a_launch_file_starts_is_an_exec_depend():
    launched = set()
    for path in (_source_tree() / "launch").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "package" and isinstance(node.value, ast.Constant):
                launched.add(node.value.value)
    assert {"robot_state_publisher", "joint_state_publisher", "robot_linearization"} <= launched
    assert launched - {"robot_linearization"} <= _depends("exec_depend")


def test_package_xml_is_format_3_ament_cmake_with_its_interfaces():
    """ament_cmake builds the interfaces with rosidl (CMakeLists.txt) and installs the Python package;
    every interface file is in CMakeLists.txt, and what they use is a <depend>."""
    root = ET.parse(_source_tree() / "package.xml").getroot()
    assert root.get("format") == "3" and root.find("name").text == "robot_linearization"
    assert root.find("export/build_type").text == "ament_cmake"
    assert root.find("member_of_group").text == "rosidl_interface_packages"
    assert {e.text for e in root.iter("buildtool_depend")} >= {"ament_cmake", "ament_cmake_python",
                                                               "rosidl_default_generators"}
    cmake = (_source_tree() / "CMakeLists.txt").read_text()
    interfaces = sorted(_source_tree().glob("msg/*.msg")) + sorted(_source_tree().glob("srv/*.srv"))
    assert len(interfaces) == 3
    used = set()
    for path in interfaces:
        assert f'"{path.parent.name}/{path.name}"' in cmake, path
        used |= {line.split("/")[0] for line in path.read_text().splitlines()
                 if "/" in line.split("#")[0].split(" ")[0]}
    assert used - {"robot_linearization"} <= {e.text for e in root.iter("depend")}, used


def test_the_rqt_plugin_is_exported_installed_and_names_a_class_that_exists():
    """rqt finds plugins through package.xml's <rqt_gui plugin="${prefix}/plugin.xml"/>
    export, in the installed share directory; plugin.xml names the class by its module path: rqt's
    entry, installed by setup.py and CMake, which takes Ctrl-C and SIGTERM before it imports the view."""
    root = _source_tree()
    exports = ET.parse(root / "package.xml").getroot().find("export")
    assert exports.find("rqt_gui").get("plugin") == "${prefix}/plugin.xml"
    assert '"plugin.xml"' in (root / "setup.py").read_text()
    plugin = ET.parse(root / "plugin.xml").getroot().find("class")
    assert plugin.get("base_class_type") == "rqt_gui_py::Plugin"
    assert plugin.find("qtgui/group/label").text == "Visualization" and "Linearization" in plugin.find(
        "qtgui/label").text
    module, _, name = plugin.get("type").rpartition(".")
    assert f'py_modules=["{module}"]' in (root / "setup.py").read_text()
    assert f"install(FILES {module}.py" in (root / "CMakeLists.txt").read_text()
    entry = ast.parse((root / (module.replace(".", "/") + ".py")).read_text())
    # rqt's entry takes the signals before anything of the package is imported (robot_linearization_rqt)
    statements = [ast.unparse(statement) for statement in entry.body]
    first_import = next(i for i, text in enumerate(statements) if "robot_linearization." in text and "import" in text)
    assert any("signal.signal(" in text for text in statements[:first_import]), statements[:first_import]
    source, = [node.module for node in entry.body if isinstance(node, ast.ImportFrom)
               and any(alias.name == name for alias in node.names)]
    classes = {node.name for node in ast.walk(ast.parse((root / (source.replace(".", "/") + ".py")).read_text()))
               if isinstance(node, ast.ClassDef)}
    assert name in classes, (source, name)
    assert {"rqt_gui", "rqt_gui_py", "python_qt_binding"} <= _depends("exec_depend")


def test_installed_files_exist_and_launch_files_compile(tmp_path):
    root = _source_tree()
    for path in ["resource/robot_linearization", "config/linearization.yaml", "launch/linearization.launch.py",
                 "launch/demo.launch.py", "launch/robot_linearization_parameters.py",
                 "launch/robot_stack.launch.py", "robot_linearization/robots/rl_quadruped.urdf"]:
        assert (root / path).exists(), path
    for launch_file in (root / "launch").glob("*.py"):
        py_compile.compile(str(launch_file), cfile=str(tmp_path / "x.pyc"), doraise=True)
    setup_cfg = (root / "setup.cfg").read_text()
    assert "$base/lib/robot_linearization" in setup_cfg


def test_parameter_defaults_in_yaml_match_the_node():
    """config/linearization.yaml lists exactly the node's parameters, with its defaults."""
    from ruamel.yaml import YAML  # a dependency of rosbags

    root = _source_tree()
    params = YAML(typ="safe").load((root / "config/linearization.yaml").read_text())["/**"]["ros__parameters"]
    defaults = {name: default for name, (default, _) in PARAMETERS.items()}
    assert params == defaults


def test_the_demo_launch_stands_the_bundled_robot_on_its_own_feet():
    """demo.launch.py names its feet literally (launch files import no package code):
    they must be the bundled robot's."""
    import re

    from robot_linearization.robots import BUNDLED_FEET

    text = (_source_tree() / "launch" / "demo.launch.py").read_text()
    feet = re.search(r'FEET = "([^"]+)"', text).group(1)
    assert tuple(f.strip() for f in feet.split(",")) == BUNDLED_FEET


def test_precompile_runs_every_kernel_the_node_uses_and_says_where(tmp_path):
    """`python -m robot_linearization.precompile` (run by colcon's install and scripts/venv.sh):
    exit 0 and one line naming the package it compiled for: the installed one, when run
    from outside a checkout (inside, `-m` would put the checkout's sources first)."""
    import subprocess
    import sys

    where = subprocess.run([sys.executable, "-c", "import robot_linearization as r; print(r.__path__[0])"],
                           capture_output=True, text=True, cwd=tmp_path, check=True).stdout.strip()
    done = subprocess.run([sys.executable, "-m", "robot_linearization.precompile"], capture_output=True, text=True,
                          timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"kernels compiled and cached for {where} (" in done.stderr


def test_one_version_in_the_package_its_metadata_package_xml_and_the_changelog():
    """robot_linearization.__version__ is what pip installed, what package.xml says, and the newest
    section of CHANGELOG.md; the changelog's sections go down by version."""
    import importlib.metadata
    import re

    import robot_linearization

    version = robot_linearization.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    assert importlib.metadata.version("robot_linearization") == version
    assert ET.parse(_source_tree() / "package.xml").getroot().findtext("version") == version
    sections = re.findall(r"^## (\d+\.\d+\.\d+)\b", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert sections and sections[0] == version, f"CHANGELOG.md's newest section is {sections[:1]}, not {version}"
    numbers = [tuple(map(int, s.split("."))) for s in sections]
    assert numbers == sorted(set(numbers), reverse=True), f"CHANGELOG.md's sections out of order: {sections}"


def test_the_ros_tests_overlay_copies_every_source_the_ros_build_installs():
    """scripts/overlay_sources.py copies what CMakeLists.txt installs from the source tree (each
    install(FILES|DIRECTORY …) path, the rosidl interfaces): a file left out fails the overlay's build
    only where ROS is."""
    import importlib.util
    import re

    root = _source_tree()
    spec = importlib.util.spec_from_file_location("overlay_sources", root / "scripts" / "overlay_sources.py")
    overlay = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(overlay)
    cmake = (root / "CMakeLists.txt").read_text()
    installed = set()
    for arguments in re.findall(r"install\((?:FILES|DIRECTORY) ([^)]*?) DESTINATION", cmake):
        installed |= {path.rstrip("/").split("/")[0] for path in arguments.split() if not path.startswith("$")}
    installed |= {path.split("/")[0] for path in re.findall(r'"((?:msg|srv)/[^"]+)"', cmake)}
    assert "robot_linearization_rqt.py" in installed and "launch" in installed, installed
    assert installed <= set(overlay.PACKAGE), installed - set(overlay.PACKAGE)
