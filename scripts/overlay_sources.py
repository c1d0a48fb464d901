"""Copy the packages the ROS tests build into an overlay's source directory (argv[1]):
robot_linearization (what its CMakeLists.txt and setup.py install) and the tests' C++ client
(test/cpp_client).  The overlay builds from this copy because CMake refuses a generated target
whose include directories (the venv's numpy, when pip put one there) lie inside the package's
source directory.  argv[1] is the overlay's own: it is replaced at every run.  A build directory
under argv[2] configured from other sources (an overlay built before from the checkout itself)
is removed: CMake refuses to reconfigure it."""

import pathlib
import shutil
import sys

PACKAGE = ("CMakeLists.txt", "package.xml", "plugin.xml", "setup.py", "setup.cfg", "resource",
           "robot_linearization", "robot_linearization_rqt.py", "launch", "config", "msg", "srv")


def main() -> None:
    root = pathlib.Path(__file__).resolve().parent.parent
    target = pathlib.Path(sys.argv[1])
    shutil.rmtree(target, ignore_errors=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc")
    for entry in PACKAGE:  # copy2 and copytree keep the files' times: the kernels' cache stays valid
        source, destination = root / entry, target / "robot_linearization" / entry
        if source.is_dir():
            shutil.copytree(source, destination, ignore=ignore)
        else:
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)
    shutil.copytree(root / "test" / "cpp_client", target / "robot_linearization_test_client", ignore=ignore)
    for package in ("robot_linearization", "robot_linearization_test_client"):
        cache = pathlib.Path(sys.argv[2], package, "CMakeCache.txt")
        configured = [line.split("=", 1)[1].strip() for line in cache.read_text().splitlines()
                      if line.startswith("CMAKE_HOME_DIRECTORY:")] if cache.exists() else []
        if configured and pathlib.Path(configured[0]) != (target / package).resolve():
            shutil.rmtree(cache.parent)


if __name__ == "__main__":
    main()
