// Which source tree this program was built from: the git commit, "-dirty" when tracked files had
// uncommitted changes, "unknown" outside a git checkout. Defined in a file generated at build time
// (cmake/build_id.cmake). Shard stamps carry it so shards of different builds are never merged.
#pragma once

namespace attnlab {

const char* build_id();

}  // namespace attnlab
