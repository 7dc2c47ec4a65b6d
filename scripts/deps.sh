#!/bin/bash
# Installs what a fresh Debian/Ubuntu machine lacks to build and test cuhook (as root, or with
# sudo). Does nothing when everything is there already.
set -e
pkgs="meson ninja-build pkg-config gcc g++ libc6-dev libcapstone-dev libelf-dev libdw-dev libunwind-dev libunicorn-dev python3 python3-dev libsqlite3-dev sqlite3 groff-base man-db zsh protobuf-compiler"
# python3-dev: CPython's internal headers, against which a unit test checks the agent's table of
# Python frame layouts (Debian 12: 3.11)
# libsqlite3-dev: cuhook report --format sqlite; sqlite3 (the CLI): its tests query the database
# groff-base, man-db, zsh: tests/cli/test_install.py renders the manual pages (groff -ww, man -l)
# and has zsh load the zsh completion (each check is left out where its tool is missing)
# protobuf-compiler: protoc, with which the report tests decode the Perfetto export against the
# fields of Perfetto's format it uses (tests/report/perfetto_subset.proto)
missing=""
for p in $pkgs; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq $missing >/dev/null
