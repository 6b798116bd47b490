// The claims ledger: one verdict row per claim id, merged atomically.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace attnlab {

// inconclusive (issue 14): the measurements' intervals do not separate, so the data cannot decide.
enum class Verdict { holds, fails, conditional, inconclusive, untested };

std::string to_string(Verdict v);
Verdict verdict_from_string(const std::string& s);  // throws std::invalid_argument

struct ClaimRow {
  std::string id;                    // "R1", as in shared/CLAIMS.md
  std::string source;                // the seed file's name
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

// Replaces the rows whose ids appear in `rows` and keeps every other row, then writes
// the ledger sorted by id, atomically. Throws std::invalid_argument on a row that breaks
// the ledger's rules (duplicate id, a verdict without evidence, a row naming no experiment, a conditional
// or inconclusive or untested verdict without a note, a non-finite number).
void merge_into_ledger(const std::filesystem::path& ledger_file, const std::vector<ClaimRow>& rows);

}  // namespace attnlab
