#!/usr/bin/env bash
# Regenerates the README's picture of a guard's live tree: docs/pictures/guard_live.dot (the DOT
# that ebt::debug::agent_dot writes) and docs/pictures/guard_live.png (Graphviz's rendering of it).
#
#   bash scripts/views.sh
#
# It runs the arena sample through scripts/run.sh (Release build in build/release; the same
# environment variables) with 300 guards for 20 simulated seconds and takes guard 256, which is
# then fleeing: its Runaway branch running, the attack and the patrol aborted. The DOT must stay
# what the code writes today: tests/debug_views_test.cpp compares the committed file with a run of
# the same arena. Needs the Debian package graphviz (installed here when missing, as run.sh does).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/deps.sh
source scripts/deps.sh

ebt_ensure_packages graphviz
mkdir -p docs/pictures
bash scripts/run.sh --agents 300 --seconds 20 --view 256 --dot docs/pictures/guard_live.dot
dot -Tpng docs/pictures/guard_live.dot -o docs/pictures/guard_live.png
ebt_log "wrote docs/pictures/guard_live.dot and docs/pictures/guard_live.png"
