# Two commands from a fresh clone: `make demo` and `make test`. Each builds what it needs.
PYTHON ?= python3
# The ROS 2 Kilted venv (requirements.txt); the Jazzy one sits inside it, so every linter's and
# git's exclusion of .venv covers it.
VENV ?= .venv
VENV_JAZZY ?= $(VENV)/jazzy
PY := $(VENV)/bin/python
PY_JAZZY := $(VENV_JAZZY)/bin/python
PIP := -m pip install --quiet --disable-pip-version-check
# control_msgs is not on PyPI: each venv gets the project's own test-only build of the types its
# tests use (test/interfaces/control_msgs, scripts/build_interfaces.py). launch, launch_testing
# and ros2cli are not on PyPI either: the tests that need them skip, naming what is missing.
INTERFACES := $(sort $(wildcard test/interfaces/control_msgs/*.* test/interfaces/control_msgs/*/*)) \
	scripts/build_interfaces.py
STAMP := $(VENV)/.stamp-$(shell cat requirements.txt requirements-dev.txt requirements-kilted.txt \
	setup.py test/interfaces/requirements-kilted.txt $(INTERFACES) | sha1sum | cut -c1-12)
STAMP_JAZZY := $(VENV_JAZZY)/.stamp-$(shell cat requirements.txt requirements-dev.txt \
	requirements-jazzy.txt setup.py test/interfaces/requirements-jazzy.txt $(INTERFACES) \
	| sha1sum | cut -c1-12)
PYTEST_ARGS ?=
# The slowest tests of each run, named in its output.
DURATIONS ?= --durations=25
# Test files run on WORKERS pytest-xdist workers, a file at a time on one worker (its module
# fixtures, a gateway or an arm, stay in one process; conftest gives each worker a ROS domain of
# its own). Most of a run waits on the wall clock, so two workers halve it on two cores.
# WORKERS=0: one process.
WORKERS ?= 2
XDIST = -n $(WORKERS) --dist loadfile
TESTS ?= test
# On Jazzy: every test file that imports rclpy or a ROS message package, or runs ROS nodes,
# launch files or the ros2 CLI: all of test/ros, and those of test/system and test/unit. The
# client, gateway, engine and lint tests do not depend on the distribution and run once, in the
# Kilted venv.
JAZZY_TESTS ?= test/ros test/unit/test_images.py $(addprefix test/system/test_,$(addsuffix .py, \
	demo forward_modes humble_api launch node node_controllers node_faults node_gateway_faults \
	node_direct node_gripper_action node_lifecycle_abuse node_record node_trajectory_modes openpi_ros \
	operator_session ros2_cli ros2_launch secrets signal_exits sim_joint_limits sim_jtc_node \
	sim_node sim_parallel_gripper_action soak spin))
# ROS 2 reached only through a sourced setup script, as on a robot: children must keep it.
SOURCED_TESTS ?= test/system/test_spin.py test/system/test_node_lifecycle_abuse.py
# Ubuntu 22.04's Python 3.10 (a pyenv build where the machine has one, else the PATH's).
PYTHON310 ?= $(firstword $(wildcard $(shell pyenv root 2>/dev/null)/versions/3.10*/bin/python3.10) \
	python3.10)
# The client core: what must stay httpx-only and type-clean.
CLIENT_CORE := sequence_ai_ros/__init__.py sequence_ai_ros/client
# The node, the runtime it spins on, the contract, the recorder and the world: type-clean too
# (setup.cfg says how rclpy and the ROS message packages are read).
NODE_CORE := sequence_ai_ros/node sequence_ai_ros/runtime sequence_ai_ros/contract \
	sequence_ai_ros/record sequence_ai_ros/world sequence_ai_ros/dataset

.PHONY: all venv venv-jazzy test test-unit test-fast test-kilted test-jazzy test-sourced test-jammy test-published test-dataset lint demo bench \
	reliability clean

all: test

venv: $(STAMP)

venv-jazzy: $(STAMP_JAZZY)

# $(call ros_venv,VENV,REQUIREMENTS,DISTRO): the pinned set, then the test-only control_msgs
# generated with that distribution's rosidl wheels (the Debian tools it needs first, if absent;
# rebuilt only when its inputs change), then this package, editable.
define ros_venv
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), \
		"the ROS 2 wheels on PyPI are built for CPython 3.11; set PYTHON=python3.11"'
	@test -x $(1)/bin/python || $(PYTHON) -m venv $(1)
	$(1)/bin/python $(PIP) -r $(2) -r test/interfaces/requirements-$(3).txt
	@debs="$$($(1)/bin/python scripts/build_interfaces.py --missing-debs)"; \
	if [ -n "$$debs" ]; then \
		echo "apt-get install $$debs (to build control_msgs for the tests)"; \
		apt-get update -qq && apt-get install -y -qq $$debs; \
	fi
	$(1)/bin/python scripts/build_interfaces.py
	$(1)/bin/python $(PIP) --no-deps -e .
	@rm -f $(1)/.stamp-* && touch $@
endef

$(STAMP): requirements.txt requirements-dev.txt requirements-kilted.txt setup.py \
		test/interfaces/requirements-kilted.txt $(INTERFACES)
	$(call ros_venv,$(VENV),requirements-kilted.txt,kilted)

# pip takes one pin per package: the Jazzy set is requirements-dev.txt with Jazzy's ros-* pins.
$(STAMP_JAZZY): requirements.txt requirements-dev.txt requirements-jazzy.txt setup.py \
		scripts/pin_set.py test/interfaces/requirements-jazzy.txt $(INTERFACES)
	@mkdir -p $(VENV_JAZZY)
	$(PYTHON) scripts/pin_set.py requirements-dev.txt requirements-jazzy.txt \
		> $(VENV_JAZZY)/requirements.txt
	$(call ros_venv,$(VENV_JAZZY),$(VENV_JAZZY)/requirements.txt,jazzy)

lint: venv
	$(PY) -m ruff check .
	$(PY) -m mypy $(CLIENT_CORE) $(NODE_CORE)
	$(VENV)/bin/vermin --no-tips --violations --eval-annotations -t=3.10- sequence_ai_ros test bench scripts setup.py

# pytest exits 5 when it collects nothing; that is not a failure of the code under test.
test: lint test-kilted test-jazzy test-sourced test-jammy test-published

test-kilted: venv
	@echo '== ROS 2 Kilted (rclpy 9.1): $(TESTS)'
	$(PY) -m pytest $(TESTS) $(XDIST) -m 'not ray' -q -raR $(DURATIONS) $(PYTEST_ARGS) || { rc=$$?; [ $$rc -eq 5 ] && echo 'no tests collected' || exit $$rc; }
	@echo '== ROS 2 Kilted: the tests that start a Ray cluster, one process'
	$(PY) -m pytest $(TESTS) -m ray -q -raR $(DURATIONS) $(PYTEST_ARGS) || { rc=$$?; [ $$rc -eq 5 ] && echo 'no tests collected' || exit $$rc; }

test-jazzy: venv-jazzy
	@echo '== ROS 2 Jazzy (rclpy 7.1): the tests that use ROS'
	$(PY_JAZZY) -m pytest $(JAZZY_TESTS) $(XDIST) -q -raR $(DURATIONS) $(PYTEST_ARGS) || { rc=$$?; [ $$rc -eq 5 ] && echo 'no tests collected' || exit $$rc; }

# What a contributor runs while working. test-unit: no ROS, nothing played in real time
# (seconds); test-fast: that, the client's runs at control rate against the local gateway
# (test/realtime, a minute) and ROS in the test process (test/ros). test/system, the
# processes, loads, soaks and lints, comes with `make test`. test/*/__init__.py says the rule
# of each folder.
test-unit: venv
	$(PY) -m pytest test/unit $(XDIST) -q -raR $(DURATIONS) $(PYTEST_ARGS)

test-fast: venv
	$(PY) -m pytest test/unit test/realtime test/ros $(XDIST) -q -raR $(DURATIONS) \
		$(PYTEST_ARGS)

# The node-spawning tests with ROS 2 only on PYTHONPATH/LD_LIBRARY_PATH (a sourced install).
test-sourced:
	$(PYTHON) scripts/sourced_ros.py --venv $(VENV)/sourced --python $(PYTHON) -q -raR \
		$(PYTEST_ARGS) $(SOURCED_TESTS)

# Ubuntu 22.04's Python 3.10 with its numpy, Pillow and httpx: the client and the node's pure
# parts, against a gateway on the Kilted venv.
test-jammy: venv
	$(PYTHON) scripts/jammy_pins.py --venv $(VENV)/jammy --python $(PYTHON310) \
		--gateway-python $(PY) -q -raR $(PYTEST_ARGS)

# The published sequence-ai 0.51.5 client, unmodified, in a venv of its own
# (test/published/requirements.txt), against the local gateway's direct protocol on the Kilted
# venv.
test-published: venv
	$(PYTHON) scripts/published_client.py --venv $(VENV)/published --python $(PYTHON) \
		--gateway-python $(PY) -q -raR $(PYTEST_ARGS)

# LeRobot itself loads the export: its own venv (Python 3.12 from pyenv, lerobot[dataset]==0.6.1
# with PyPI's CUDA torch, ~5.4 GB, cached in .venv/dataset); not part of make test.
# torchcodec, LeRobot's video decoder, loads FFmpeg's shared libraries: Debian's ffmpeg brings them.
test-dataset: venv
	@command -v ffmpeg >/dev/null || { echo 'apt-get install ffmpeg (torchcodec needs its libraries)'; \
		apt-get update -qq && apt-get install -y -qq ffmpeg; }
	$(PYTHON) scripts/dataset_venv.py --kilted-python $(PY) $(PYTEST_ARGS)

demo: venv
	$(PY) -m sequence_ai_ros.cli demo $(DEMO_ARGS)

bench: venv
	$(PY) -m bench.run_all

# Rerun every fault test and rewrite docs/RELIABILITY.md from what they measured.
reliability: venv
	$(PY) scripts/reliability_matrix.py

# The chaos soak: SOAK_MINUTES of randomized faults over one node; its section of RELIABILITY.md.
SOAK_MINUTES ?= 20
SOAK_SEED ?= 1
.PHONY: soak
soak: venv
	$(PY) scripts/soak.py --minutes $(SOAK_MINUTES) --seed $(SOAK_SEED) --doc docs/RELIABILITY.md

clean:
	rm -rf $(VENV) build install log .pytest_cache .mypy_cache .ruff_cache
