"""mbs_dynamics: ament_python package that also installs with plain ``pip install .``.

The kernels (``mbs_dynamics/kernels/_*.pyx``, ``mbs_dynamics/control/_*.pyx``) are Cython, compiled here ahead of time: by pip (build
requirements in pyproject.toml) and by ``colcon build`` (package.xml's build_depend: cython3,
python3-numpy). Nothing compiles at run time.
"""
import os
import sys
from glob import glob

from setuptools import Extension, find_packages, setup

package_name = "mbs_dynamics"


def data_tree(root):
    """Files under mbs_dynamics/<root>, relative to the package, for package_data."""
    out = []
    for d, dirs, files in os.walk(os.path.join(package_name, root)):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        out += [os.path.relpath(os.path.join(d, f), package_name) for f in files
                if not f.endswith((".py", ".pyc"))]
    return out




def extensions():
    """One extension per kernel module; OpenMP for the threaded batch kernels where gcc/clang
    on Linux provides it."""
    import numpy
    from Cython.Build import cythonize
    omp = ["-fopenmp"] if sys.platform.startswith("linux") else []
    exts = [
        Extension(f"{package_name}.{name}", [f"{package_name}/{name.replace('.', '/')}.pyx"],
                  include_dirs=[numpy.get_include(), f"{package_name}/kernels"],
                  define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                  extra_compile_args=["-O3", "-fno-math-errno", "-ffp-contract=off", "-fno-trapping-math", "--param=max-inline-insns-single=2000"] + omp, extra_link_args=omp)
        for name in ("kernels._data", "kernels._rnea", "kernels._crba", "kernels._aba",
                     "control._spline", "control._actuators", "control._flatness",
                     "kernels._rnea_repr", "kinematics._jets", "kinematics._closed", "loops._hdca",
                     "kinematics._frames", "identification._regressor", "loops._closed",
                     "identification._derivatives", "kernels._minv",
                     "kernels._rnea_so", "identification._csv", "kernels._lie")
    ]
    return cythonize(exts, compiler_directives={"language_level": 3}, quiet=True)


setup(
    name=package_name,
    ext_modules=extensions(),
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*", "bench"]),
    package_data={package_name: data_tree("data") + ["kernels/*.pxd", "kernels/*.h", "control/*.pxd",
                                                      "codegen/*.c.in"]},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob("launch/*.py")),
        ("share/" + package_name + "/config", glob("config/*.yaml")),
    ],
    python_requires=">=3.10",
    install_requires=["numpy>=1.25", "pyyaml>=6", "scipy>=1.10"],
    extras_require={
        "plot": ["matplotlib>=3.7"],
        # mbs-dynamics identify, mbs_dynamics.identification.logs: rosbag2 logs without ROS
        "identify": ["rosbags>=0.10"],
        # mbs_dynamics.identification.fleet on Dask (identification.distributed)
        "fleet": ["rosbags>=0.10", "dask[distributed]>=2024.1", "matplotlib>=3.7"],
        "test": ["pytest>=7", "hypothesis>=6", "pin>=3", "mujoco>=3.1", "example-robot-data>=4",
                 "matplotlib>=3.7", "scipy>=1.10", "dynibo>=0.5", "rosbags>=0.10",
                 "dask[distributed]>=2024.1"],
        "bench": ["pin>=3", "dynibo>=0.5", "mujoco>=3.1", "example-robot-data>=4",
                  "matplotlib>=3.7"],
        # the documentation: sphinx-build -W -b html doc build/html (offline)
        "doc": ["sphinx>=7.2", "myst-parser>=2", "furo>=2024.1"],
    },
    zip_safe=False,
    maintainer="mbs_dynamics maintainers",
    maintainer_email="maintainers@mbs-dynamics.invalid",
    description="Exact rigid-body dynamics and its time derivatives from URDF for 1 kHz feedforward",
    license="BSD-3-Clause",
    entry_points={
        "console_scripts": [
            "mbs-dynamics = mbs_dynamics.cli:main",
            "feedforward_node = mbs_dynamics.ros.entry:feedforward_node",
            "sim_node = mbs_dynamics.ros.entry:sim_node",
            "feedforward_proxy = mbs_dynamics.ros.entry:feedforward_proxy",
        ],
    },
)
