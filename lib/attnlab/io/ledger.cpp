// The claims ledger: one verdict row per claim id, merged atomically.
#include "attnlab/io/ledger.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <tuple>
#include <stdexcept>

#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/file_lock.hpp"

namespace attnlab {

std::string to_string(Verdict v) {
  switch (v) {
#define ATTNLAB_VERDICT(name, unused) \
  case Verdict::name:                 \
    return #name;
#include "attnlab/io/verdicts.inc"
#undef ATTNLAB_VERDICT
  }
  throw std::invalid_argument("to_string: not a Verdict");
}

Verdict verdict_from_string(const std::string& s) {
#define ATTNLAB_VERDICT(name, unused) \
  if (s == #name) return Verdict::name;
#include "attnlab/io/verdicts.inc"
#undef ATTNLAB_VERDICT
  throw std::invalid_argument("unknown verdict '" + s + "'");
}

std::string claim_source(const std::string& id) {
  const std::string letter = id.substr(0, 1);
#define ATTNLAB_CLAIM_SOURCE(prefix, document) \
  if (letter == #prefix) return document;
#include "attnlab/io/claim_sources.inc"
#undef ATTNLAB_CLAIM_SOURCE
  throw std::invalid_argument("claim id '" + id + "': its letter names no source document (lib/attnlab/io/claim_sources.tsv)");
}

std::string correction_id(const std::string& id) { return id + ".c"; }

bool claim_id_less(const std::string& a, const std::string& b) {
  // (letters, number, rest): "R5.c" is R, 5, ".c"; an id without a number sorts first among its letter's.
  auto split = [](const std::string& id) {
    std::size_t i = 0;
    while (i < id.size() && !std::isdigit(static_cast<unsigned char>(id[i]))) ++i;
    std::size_t j = i;
    while (j < id.size() && std::isdigit(static_cast<unsigned char>(id[j]))) ++j;
    const bool numeric = j > i && j - i <= 18;
    return std::make_tuple(id.substr(0, i), numeric ? std::stoll(id.substr(i, j - i)) : -1LL, id.substr(j));
  };
  return split(a) < split(b);
}

namespace {

std::optional<double> parse_optional_number(const std::string& s, const std::string& what) {
  if (s.empty()) return std::nullopt;
  // strtod, not stod: stod throws on subnormal values, which are valid observations.
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) throw std::runtime_error(what + " '" + s + "' is not a number");
  return v;
}

void validate(const ClaimRow& r) {
  if (r.id.empty()) throw std::invalid_argument("ledger: a row has an empty id");
  claim_source(r.id);  // throws for an id that names no source document
  if (!r.corrects.empty() && r.id != correction_id(r.corrects))
    throw std::invalid_argument("ledger: correction " + r.id + " of " + r.corrects + " must be called " + correction_id(r.corrects));
  const bool untested = r.verdict == Verdict::untested;
  if (!untested && r.evidence.empty())
    throw std::invalid_argument("ledger: " + r.id + " has a measured verdict but no evidence file");
  // Provenance (issue 13): every row names the experiment that wrote it.
  if (r.experiment.empty()) throw std::invalid_argument("ledger: " + r.id + " names no experiment");
  if ((r.verdict == Verdict::conditional || r.verdict == Verdict::inconclusive || untested) && r.note.empty())
    throw std::invalid_argument("ledger: " + r.id + " is " + to_string(r.verdict) + " without a note");
  if (!untested && (!r.observed || !r.threshold))
    throw std::invalid_argument("ledger: " + r.id + " has a measured verdict without observed and threshold");
  for (const auto& x : {r.observed, r.threshold})
    if (x && !std::isfinite(*x))
      throw std::invalid_argument("ledger: " + r.id + " has a non-finite observed value or threshold");
}

}  // namespace

std::vector<ClaimRow> read_ledger(const std::filesystem::path& ledger_file) {
  if (!std::filesystem::exists(ledger_file)) return {};
  const auto rows = read_csv_file(ledger_file);
  if (rows.empty()) return {};
  std::string header;
  for (std::size_t i = 0; i < rows[0].size(); ++i) header += (i ? "," : "") + rows[0][i];
  const bool corrections = header == kCorrectionsHeader;
  if (header != kLedgerHeader && !corrections)
    throw std::runtime_error(ledger_file.string() + ": header is neither '" + kLedgerHeader + "' nor '" + kCorrectionsHeader + "'");
  const std::size_t fields = corrections ? 10 : 9;
  std::vector<ClaimRow> out;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto& f = rows[i];
    if (f.size() != fields)
      throw std::runtime_error(ledger_file.string() + ": row " + std::to_string(i + 1) + " has " +
                               std::to_string(f.size()) + " fields, expected " + std::to_string(fields));
    try {
      if (f[1] != claim_source(f[0]))
        throw std::runtime_error("source '" + f[1] + "' is not claim " + f[0] + "'s document '" + claim_source(f[0]) +
                                 "' (lib/attnlab/io/claim_sources.tsv)");
      out.push_back({f[0], verdict_from_string(f[2]), f[3], parse_optional_number(f[4], "observed"),
                     parse_optional_number(f[5], "threshold"), f[6], f[7], f[8], corrections ? f[9] : std::string()});
      if (corrections && (out.back().corrects.empty() || out.back().id != correction_id(out.back().corrects)))
        throw std::runtime_error("correction " + f[0] + " does not name the claim it corrects as " + f[0] + " = <claim>.c");
    } catch (const std::exception& e) {
      throw std::runtime_error(ledger_file.string() + ": row " + std::to_string(i + 1) + ": " + e.what());
    }
  }
  return out;
}

std::filesystem::path ledger_lock_path(const std::filesystem::path& ledger_file) {
  return ledger_file.parent_path() / ("." + ledger_file.filename().string() + ".lock");
}

void merge_into_ledger(const std::filesystem::path& ledger_file, const std::vector<ClaimRow>& rows) {
  if (rows.empty()) return;  // nothing to merge: the file stays as it is
  std::set<std::string> new_ids;
  const bool corrections = !rows.empty() && !rows.front().corrects.empty();
  for (const auto& r : rows) {
    validate(r);
    if (!new_ids.insert(r.id).second) throw std::invalid_argument("ledger: duplicate id " + r.id);
    if (r.corrects.empty() == corrections)
      throw std::invalid_argument("ledger: " + r.id + ": claims and corrections go to two ledgers, never one");
  }
  // One writer at a time: two experiments finishing together into one directory would otherwise each read
  // the ledger, add their rows and rename, the second rename dropping the first one's rows.
  FileLock lock(ledger_lock_path(ledger_file));
  std::vector<ClaimRow> merged;
  for (auto& old : read_ledger(ledger_file))
    if (!new_ids.count(old.id)) merged.push_back(std::move(old));
  merged.insert(merged.end(), rows.begin(), rows.end());
  std::sort(merged.begin(), merged.end(), [](const ClaimRow& a, const ClaimRow& b) { return claim_id_less(a.id, b.id); });

  std::string text = std::string(corrections ? kCorrectionsHeader : kLedgerHeader) + '\n';
  auto number = [](const std::optional<double>& x) { return x ? format_real(*x) : std::string(); };
  for (const auto& r : merged) {
    if (r.corrects.empty() == corrections)
      throw std::invalid_argument("ledger: " + ledger_file.string() + " holds " + (corrections ? "claims" : "corrections") +
                                  ", not " + (corrections ? "corrections" : "claims") + " like " + rows.front().id);
    text += quote_field(r.id) + ',' + quote_field(claim_source(r.id)) + ',' + to_string(r.verdict) + ',' +
            quote_field(r.metric) + ',' + number(r.observed) + ',' + number(r.threshold) + ',' +
            quote_field(r.evidence) + ',' + quote_field(r.note) + ',' + quote_field(r.experiment) +
            (corrections ? ',' + quote_field(r.corrects) : std::string()) + '\n';
  }
  write_file_atomically(ledger_file, text);
}

}  // namespace attnlab
