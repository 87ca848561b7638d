// JSON reports read back, merged (the shards of one run) and compared (an
// earlier run), see report_tools.h and runner.h.
#include "lizard/conformance/report_tools.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace lizard::conformance {

namespace {

using rapidjson::Value;

std::string text_of(const Value& object, const char* name) {
  auto it = object.FindMember(name);
  return it != object.MemberEnd() && it->value.IsString()
             ? std::string(it->value.GetString(), it->value.GetStringLength())
             : "";
}

double number_of(const Value& object, const char* name) {
  auto it = object.FindMember(name);
  return it != object.MemberEnd() && it->value.IsNumber() ? it->value.GetDouble() : 0;
}

RuleResult parse_rule(const Value& v, const std::string& source) {
  if (!v.IsObject()) throw ReportError(source + ": a rule is not an object");
  RuleResult r;
  r.id = text_of(v, "id");
  const auto status = parse_status(text_of(v, "status"));
  if (r.id.empty() || !status) {
    throw ReportError(source + ": a rule without an id or a PASS/FAIL/SKIP status");
  }
  r.status = *status;
  r.seconds = number_of(v, "seconds");
  r.wait_seconds = number_of(v, "wait_seconds");
  r.reason = text_of(v, "reason");
  if (auto expected = parse_status(text_of(v, "expected"))) {
    r.expected = expected;
    r.expected_reason = text_of(v, "expected_reason");
    r.expected_link = text_of(v, "link");
  }
  return r;
}

void parse_extras(const Value& doc, RunReport& report) {
  auto shard = doc.FindMember("shard");
  if (shard != doc.MemberEnd() && shard->value.IsObject()) {
    report.shard.index = static_cast<int>(number_of(shard->value, "index"));
    report.shard.count = std::max(1, static_cast<int>(number_of(shard->value, "count")));
  }
  auto merged = doc.FindMember("merged_shards");
  if (merged != doc.MemberEnd() && merged->value.IsArray()) {
    for (const auto& i : merged->value.GetArray()) {
      if (i.IsInt()) report.merged_shards.push_back(i.GetInt());
    }
  }
  auto expectations = doc.FindMember("expectations");
  if (expectations != doc.MemberEnd() && expectations->value.IsObject()) {
    report.expectations = text_of(expectations->value, "file");
  }
  auto notes = doc.FindMember("notes");
  if (notes != doc.MemberEnd() && notes->value.IsArray()) {
    for (const auto& n : notes->value.GetArray()) {
      if (n.IsString()) report.notes.emplace_back(n.GetString(), n.GetStringLength());
    }
  }
}

// The shard a report covers, for merge's checks ("whole" when not sharded).
std::string shard_name(const RunReport& r) {
  return r.shard.sharded()
             ? "shard " + std::to_string(r.shard.index) + " of " + std::to_string(r.shard.count)
             : "an unsharded run";
}

// Refuses reports that cannot make one run: versions, backends, shard counts.
void check_compatible(const std::vector<NamedReport>& reports) {
  const NamedReport& first = reports.front();
  for (const auto& r : reports) {
    if (r.report.suite_version != first.report.suite_version) {
      throw ReportError("different suite versions: " + first.source + " is suite " +
                        first.report.suite_version + ", " + r.source + " is suite " +
                        r.report.suite_version);
    }
    if (r.report.backend != first.report.backend) {
      throw ReportError("different backends: " + first.source + " is " + first.report.backend +
                        ", " + r.source + " is " + r.report.backend);
    }
    if (r.report.shard.count != first.report.shard.count) {
      throw ReportError("different shard counts: " + first.source + " is " +
                        shard_name(first.report) + ", " + r.source + " is " + shard_name(r.report));
    }
  }
}

// Refuses two reports of one shard, and missing shards; `indexes` gets the shards.
void check_shards(const std::vector<NamedReport>& reports, std::vector<int>& indexes) {
  const int count = reports.front().report.shard.count;
  std::map<int, std::string> seen;
  if (count <= 1) return;  // unsharded runs (disjoint filters, say): the rules decide
  for (const auto& r : reports) {
    auto [it, fresh] = seen.emplace(r.report.shard.index, r.source);
    if (!fresh) {
      throw ReportError("overlapping shards: " + it->second + " and " + r.source + " are both " +
                        shard_name(r.report));
    }
  }
  std::string missing;
  for (int i = 0; i < count; ++i) {
    if (!seen.count(i)) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
  }
  if (!missing.empty()) {
    throw ReportError("incomplete: shard " + missing + " of " + std::to_string(count) +
                      " is missing");
  }
  for (const auto& [index, source] : seen) indexes.push_back(index);
}

}  // namespace

RunReport parse_json_report(std::string_view text, const std::string& source) {
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) throw ReportError(source + ": not a JSON object");
  RunReport report;
  report.suite_version = text_of(doc, "suite_version");
  report.backend = text_of(doc, "backend");
  auto rules = doc.FindMember("rules");
  if (report.suite_version.empty() || rules == doc.MemberEnd() || !rules->value.IsArray()) {
    throw ReportError(source +
                      ": not a lizard-conformance JSON report (no suite_version or rules)");
  }
  report.wall_seconds = number_of(doc, "wall_seconds");
  report.jobs = std::max(1, static_cast<int>(number_of(doc, "jobs")));
  for (const auto& v : rules->value.GetArray()) report.rules.push_back(parse_rule(v, source));
  parse_extras(doc, report);
  return report;
}

RunReport read_json_report(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ReportError(path + ": cannot be read");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_json_report(buffer.str(), path);
}

RunReport merge_reports(const std::vector<NamedReport>& reports) {
  if (reports.empty()) throw ReportError("no reports to merge");
  check_compatible(reports);
  RunReport merged;
  merged.suite_version = reports.front().report.suite_version;
  merged.backend = reports.front().report.backend;
  check_shards(reports, merged.merged_shards);
  std::map<std::string, std::string> owner;  // rule -> the file that has it
  std::map<std::string, RuleResult> results;
  for (const auto& r : reports) {
    for (const auto& rule : r.report.rules) {
      auto [it, fresh] = owner.emplace(rule.id, r.source);
      if (!fresh) {
        throw ReportError("overlapping shards: " + rule.id + " is in " + it->second + " and in " +
                          r.source);
      }
      results[rule.id] = rule;
    }
    merged.wall_seconds = std::max(merged.wall_seconds, r.report.wall_seconds);
    merged.jobs = std::max(merged.jobs, r.report.jobs);
    if (merged.expectations.empty()) merged.expectations = r.report.expectations;
    for (const auto& note : r.report.notes) {
      merged.notes.push_back(reports.size() > 1 ? shard_name(r.report) + ": " + note : note);
    }
  }
  // The suite's table order for the rules it knows, then the others as found.
  for (const RuleInfo& rule : all_rules()) {
    auto it = results.find(std::string(rule.id));
    if (it == results.end()) continue;
    merged.rules.push_back(std::move(it->second));
    results.erase(it);
  }
  for (const auto& r : reports) {
    for (const auto& rule : r.report.rules) {
      if (results.count(rule.id)) merged.rules.push_back(rule);
    }
  }
  if (merged.merged_shards.size() <= 1) merged.merged_shards.clear();
  return merged;
}

void compare_reports(RunReport& report, const RunReport& old, const std::string& old_source) {
  Comparison c;
  c.old_source = old_source;
  c.old_suite_version = old.suite_version;
  for (const auto& now : report.rules) {
    const RuleResult* before = old.find(now.id);
    if (before == nullptr) {
      c.new_rules.push_back(now.id);
      continue;
    }
    if (before->status == now.status) {
      ++c.unchanged;
      continue;
    }
    StatusChange change{now.id, before->status, now.status, now.reason};
    if (before->status == Status::kPass && now.status == Status::kFail) {
      c.regressions.push_back(std::move(change));
    } else if (before->status == Status::kFail && now.status == Status::kPass) {
      c.fixes.push_back(std::move(change));
    } else {
      c.other_changes.push_back(std::move(change));
    }
  }
  report.comparison = std::move(c);
}

}  // namespace lizard::conformance
