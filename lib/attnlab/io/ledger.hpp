// The claims ledger: one verdict row per claim id, merged atomically.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace attnlab {

// The verdicts, as lib/attnlab/io/verdicts.tsv defines them with their meanings (CMake lists them in
// generated/attnlab/io/verdicts.inc; the report reads the same file). inconclusive (issue 14): the
// measurements' intervals do not separate, so the data cannot decide.
enum class Verdict {
#define ATTNLAB_VERDICT(name, unused) name,
#include "attnlab/io/verdicts.inc"
#undef ATTNLAB_VERDICT
};

std::string to_string(Verdict v);
Verdict verdict_from_string(const std::string& s);  // throws std::invalid_argument

// The source document (its file name in ../shared/seeds/) of claim `id`, by the id's letter, as
// lib/attnlab/io/claim_sources.tsv defines it; throws std::invalid_argument for an id whose letter
// names no document.
std::string claim_source(const std::string& id);

struct ClaimRow {
  std::string id;                    // "R1", as in shared/CLAIMS.md; its source document is claim_source(id)
  Verdict verdict = Verdict::untested;
  std::string metric;                // what `observed` measures, with its unit
  std::optional<double> observed;    // empty only for an untested claim
  std::optional<double> threshold;   // the bound fixed before the run
  std::string evidence;              // evidence CSV, relative to the repository root
  std::string note;                  // condition of a conditional verdict, intervals of an inconclusive one, reason of an untested one
  std::string experiment = {};       // the executable that wrote the row (bin/<experiment>); ExperimentCli fills it in
};

// The exact header of claims.csv.
inline constexpr const char* kLedgerHeader = "id,source,verdict,metric,observed,threshold,evidence,note,experiment";

// Orders claim ids by letter, then by number: R2 before R10.
bool claim_id_less(const std::string& a, const std::string& b);

// Reads <dir>/claims.csv; an absent file is an empty ledger. Throws std::runtime_error
// naming the file on a wrong header or a malformed row.
std::vector<ClaimRow> read_ledger(const std::filesystem::path& ledger_file);

// The lock file merge_into_ledger holds while it updates `ledger_file`: .claims.csv.lock beside it.
std::filesystem::path ledger_lock_path(const std::filesystem::path& ledger_file);

// Replaces the rows whose ids appear in `rows` and keeps every other row, then writes
// the ledger sorted by id, atomically, all under an exclusive lock on ledger_lock_path (FileLock): of
// several processes updating one ledger at once, each waits its turn and none loses another's rows. Throws std::invalid_argument on a row that breaks
// the ledger's rules (duplicate id, a verdict without evidence, a row naming no experiment, a conditional
// or inconclusive or untested verdict without a note, a non-finite number).
void merge_into_ledger(const std::filesystem::path& ledger_file, const std::vector<ClaimRow>& rows);

}  // namespace attnlab
