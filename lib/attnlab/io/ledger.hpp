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
  // For a corrected statement (what is true where claim `corrects` fails or holds only conditionally): the id of
  // that claim; its own id is "<corrects>.c" (R5.c corrects R5). Empty for a claim of the catalogue.
  std::string corrects = {};
};

// The exact header of claims.csv.
inline constexpr const char* kLedgerHeader = "id,source,verdict,metric,observed,threshold,evidence,note,experiment";
// The exact header of corrections.csv, the second ledger (the corrected statements): the claims' columns, then
// `corrects`. claims.csv keeps its columns, so every reader of it keeps working.
inline constexpr const char* kCorrectionsHeader = "id,source,verdict,metric,observed,threshold,evidence,note,experiment,corrects";
// The ledgers' file names in a results directory.
inline constexpr const char* kClaimsFile = "claims.csv";
inline constexpr const char* kCorrectionsFile = "corrections.csv";

// The id of the corrected statement of claim `id`: "R5" -> "R5.c".
std::string correction_id(const std::string& id);

// Orders claim ids by letter, then by number, then by suffix: R2 before R10, R5 before R5.c before R6.
bool claim_id_less(const std::string& a, const std::string& b);

// Reads a ledger (claims.csv, or corrections.csv with its `corrects` column); an absent file is an empty
// ledger. Throws std::runtime_error naming the file on a wrong header or a malformed row.
std::vector<ClaimRow> read_ledger(const std::filesystem::path& ledger_file);

// The lock file merge_into_ledger holds while it updates `ledger_file`: .claims.csv.lock beside it.
std::filesystem::path ledger_lock_path(const std::filesystem::path& ledger_file);

// Replaces the rows whose ids appear in `rows` and keeps every other row, then writes
// the ledger sorted by id, atomically, all under an exclusive lock on ledger_lock_path (FileLock): of
// several processes updating one ledger at once, each waits its turn and none loses another's rows. Throws std::invalid_argument on a row that breaks
// the ledger's rules (duplicate id, a verdict without evidence, a row naming no experiment, a conditional
// or inconclusive or untested verdict without a note, a non-finite number). Rows with `corrects` go to a
// corrections ledger (kCorrectionsHeader), rows without to a claims ledger (kLedgerHeader): mixing them, or
// merging one kind into a file of the other, is refused. A correction's id must be correction_id(corrects).
void merge_into_ledger(const std::filesystem::path& ledger_file, const std::vector<ClaimRow>& rows);

}  // namespace attnlab
