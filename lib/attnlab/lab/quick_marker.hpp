// The file that marks a directory written by --quick runs. A quick sweep's verdicts are smoke tests, not
// findings, so quick and full results never share a directory: quick runs refuse a directory with a full
// run's ledger in it (`exp_nystrom --quick` from the repository root would otherwise rewrite the committed
// results/claims.csv), and full runs (and merges of full shards) refuse a quick directory.
#pragma once

namespace attnlab {

inline constexpr const char* kQuickMarker = ".attnlab-quick";
inline constexpr const char* kQuickMarkerText =
    "This directory holds attnlab --quick results (smoke tests, not findings); full runs refuse it.\n";

}  // namespace attnlab
