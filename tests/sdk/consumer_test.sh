#!/usr/bin/env bash
# Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#
# Builds the SDK's template plugin as an outside project would: installs the SDK into a temporary
# prefix, configures sdk/template with find_package(mstar_sdk) against it, builds, validates the
# manifest, and checks that `mstar plugins list` finds and loads the plugin.
# Usage: consumer_test.sh BUILD_DIR SOURCE_DIR CMAKE MSTAR
set -euo pipefail
build_dir=$1 source_dir=$2 cmake=$3 mstar=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/mstar-sdk-consumer-XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== install the SDK into $work/prefix"
"$cmake" --install "$build_dir" --prefix "$work/prefix" >"$work/install.log"
test -f "$work/prefix/lib/cmake/mstar_sdk/mstar_sdkConfig.cmake"
test -f "$work/prefix/include/mstar/plugin.h"
test -f "$work/prefix/include/mstar/sdk.hpp"

echo "== the reference plugins are installed, the test plugins and the built template are not"
installed=$(ls "$work/prefix/lib/mstar/plugins")
echo "$installed" | grep -qx echo
if echo "$installed" | grep -Eq '^(kit|cap_.*|nc_.*|template)$'; then
  echo "installed plugins that are not for operators: $(echo "$installed" | tr '\n' ' ')" >&2
  exit 1
fi

echo "== build the template as its own project"
cp -r "$source_dir/sdk/template" "$work/my_plugin"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
"$cmake" -S "$work/my_plugin" -B "$work/my_plugin/build" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >"$work/configure.log"
"$cmake" --build "$work/my_plugin/build" >"$work/build.log"
plugin_dir="$work/my_plugin/build/template"
test -f "$plugin_dir/libtemplate.so"
test -f "$plugin_dir/template.toml"

echo "== only the entry point is exported"
exports=$(nm -D --defined-only "$plugin_dir/libtemplate.so" | awk '{print $3}')
if [ "$exports" != "mstar_plugin_entry" ]; then
  echo "unexpected exports: $exports" >&2
  exit 1
fi

echo "== the runtime validates and loads it"
"$mstar" plugins validate "$plugin_dir/template.toml"
listing=$("$mstar" plugins list --no-default-paths --plugin-path "$plugin_dir" --json)
echo "$listing"
echo "$listing" | grep -q '"name": "template"'
echo "$listing" | grep -q "\"library\": \"$plugin_dir/libtemplate.so\""
echo "$listing" | grep -q '"rejected": \[\]'
echo "== ok"
