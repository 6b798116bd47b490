// The attnlab checkout a path lies in, found at run time (never compiled in): the nearest directory at or above
// it that holds the repository's marks, CMakeLists.txt, tools/make_report.py and lib/attnlab/io/verdicts.tsv (an
// installation's share/attnlab has the last two, never the first). The ledger names
// evidence relative to it, and the committed results/ of it are refused as a user's output directory.
//
//   if (const auto root = checkout_root(out)) ...   // std::nullopt: out lies in no checkout
#pragma once

#include <filesystem>
#include <optional>

namespace attnlab {

// For `path` (need not exist; taken absolute with symbolic links of its existing part resolved): the nearest
// ancestor (or itself) that is an attnlab checkout, or std::nullopt.
std::optional<std::filesystem::path> checkout_root(const std::filesystem::path& path);

}  // namespace attnlab
