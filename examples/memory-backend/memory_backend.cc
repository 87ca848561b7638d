#include "memory_backend.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <stdexcept>

#include "lizard/workspace/checks.h"

namespace memory_backend {

namespace ws = lizard::workspace;

// One environment: normalized absolute path -> node. "/" and "/work" always exist.
struct MemoryBackend::Store {
  struct Node {
    bool dir = false;
    std::string data;
  };
  std::mutex mutex;
  std::map<std::string, Node> nodes = {{"/", {true, ""}}, {"/work", {true, ""}}};
};

namespace {

std::mutex registry_mutex;
std::map<std::string, std::shared_ptr<MemoryBackend::Store>>& registry() {
  static std::map<std::string, std::shared_ptr<MemoryBackend::Store>> stores;
  return stores;
}

std::shared_ptr<MemoryBackend::Store> find_store(const std::string& id) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = registry().find(id);
  if (it == registry().end()) {
    throw ws::WorkspaceUnavailableError("memory environment " + id + " does not exist");
  }
  return it->second;
}

std::string parent_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  return path == "/" ? "/" : path.substr(path.find_last_of('/') + 1);
}

// The normalized path; std::invalid_argument unless absolute.
std::string checked(const std::string& path) {
  ws::require_absolute_path(path);
  return ws::normalize_path(path);
}

using Nodes = std::map<std::string, MemoryBackend::Store::Node>;

// Every ancestor must be a directory: a missing one is ENOENT, a file ENOTDIR.
void check_ancestors(const Nodes& nodes, const std::string& path, const char* what) {
  std::vector<std::string> ancestors;
  for (std::string p = path; p != "/";) {
    p = parent_of(p);
    ancestors.push_back(p);
  }
  for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it) {
    auto node = nodes.find(*it);
    if (node == nodes.end()) {
      throw ws::make_path_error(what, path, std::errc::no_such_file_or_directory);
    }
    if (!node->second.dir) throw ws::make_path_error(what, path, std::errc::not_a_directory);
  }
}

// Creates missing ancestors as directories (ENOTDIR when one is a file).
void make_ancestors(Nodes& nodes, const std::string& path, const char* what) {
  std::vector<std::string> ancestors;
  for (std::string p = path; p != "/";) {
    p = parent_of(p);
    ancestors.push_back(p);
  }
  for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it) {
    auto [node, inserted] = nodes.try_emplace(*it, MemoryBackend::Store::Node{true, ""});
    if (!inserted && !node->second.dir) {
      throw ws::make_path_error(what, path, std::errc::not_a_directory);
    }
  }
}

ws::FileEntry entry_of(const std::string& path, const MemoryBackend::Store::Node& node) {
  ws::FileEntry e;
  e.name = name_of(path);
  e.path = path;
  e.is_dir = node.dir;
  if (!node.dir) e.size = node.data.size();
  return e;
}

std::string new_id() {
  static std::atomic<unsigned long> counter{0};
  return "env-" + std::to_string(++counter);
}

}  // namespace

MemoryBackend::MemoryBackend() : id_(new_id()) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry()[id_] = std::make_shared<Store>();
}

MemoryBackend::MemoryBackend(const ws::WorkspaceRef& ref) : id_(ref.id) {
  if (ref.provider != "memory") throw std::invalid_argument("not a memory ref: " + ref.to_string());
}

MemoryBackend::~MemoryBackend() = default;

std::optional<ws::WorkspaceRef> MemoryBackend::ref() const {
  return ws::WorkspaceRef{"memory", id_};
}

void MemoryBackend::destroy() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry().erase(id_);
}

std::string MemoryBackend::read_bytes(const std::string& path) {
  const std::string p = checked(path);
  auto store = find_store(id_);
  std::lock_guard<std::mutex> lock(store->mutex);
  check_ancestors(store->nodes, p, "read_bytes");
  auto it = store->nodes.find(p);
  if (it == store->nodes.end()) {
    throw ws::make_path_error("read_bytes", path, std::errc::no_such_file_or_directory);
  }
  if (it->second.dir) throw ws::make_path_error("read_bytes", path, std::errc::is_a_directory);
  return it->second.data;
}

void MemoryBackend::write_bytes(const std::string& path, const std::string& data) {
  const std::string p = checked(path);
  auto store = find_store(id_);
  std::lock_guard<std::mutex> lock(store->mutex);
  make_ancestors(store->nodes, p, "write_bytes");
  auto& node = store->nodes[p];
  if (node.dir) throw ws::make_path_error("write_bytes", path, std::errc::is_a_directory);
  node.data = data;
}

ws::FileEntry MemoryBackend::stat(const std::string& path) {
  const std::string p = checked(path);
  auto store = find_store(id_);
  std::lock_guard<std::mutex> lock(store->mutex);
  check_ancestors(store->nodes, p, "stat");
  auto it = store->nodes.find(p);
  if (it == store->nodes.end()) {
    throw ws::make_path_error("stat", path, std::errc::no_such_file_or_directory);
  }
  return entry_of(p, it->second);
}

std::vector<ws::FileEntry> MemoryBackend::list_dir(const std::string& path) {
  const std::string p = checked(path);
  auto store = find_store(id_);
  std::lock_guard<std::mutex> lock(store->mutex);
  check_ancestors(store->nodes, p, "list_dir");
  auto it = store->nodes.find(p);
  if (it == store->nodes.end()) {
    throw ws::make_path_error("list_dir", path, std::errc::no_such_file_or_directory);
  }
  if (!it->second.dir) throw ws::make_path_error("list_dir", path, std::errc::not_a_directory);
  const std::string prefix = p == "/" ? "/" : p + "/";
  std::vector<ws::FileEntry> entries;
  for (auto child = store->nodes.lower_bound(prefix);
       child != store->nodes.end() && child->first.compare(0, prefix.size(), prefix) == 0;
       ++child) {
    if (child->first.size() > prefix.size() &&
        child->first.find('/', prefix.size()) == std::string::npos) {
      entries.push_back(entry_of(child->first, child->second));
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const ws::FileEntry& a, const ws::FileEntry& b) { return a.name < b.name; });
  return entries;
}

void MemoryBackend::make_dir(const std::string& path) {
  const std::string p = checked(path);
  auto store = find_store(id_);
  std::lock_guard<std::mutex> lock(store->mutex);
  make_ancestors(store->nodes, p, "make_dir");
  auto [node, inserted] = store->nodes.try_emplace(p, Store::Node{true, ""});
  if (!inserted && !node->second.dir) {
    throw ws::make_path_error("make_dir", path, std::errc::file_exists);
  }
}

void MemoryBackend::remove(const std::string& path) {
  const std::string p = checked(path);
  ws::refuse_remove_of_working_dir(path, working_dir());
  auto store = find_store(id_);
  std::lock_guard<std::mutex> lock(store->mutex);
  check_ancestors(store->nodes, p, "remove");
  auto it = store->nodes.find(p);
  if (it == store->nodes.end()) {
    throw ws::make_path_error("remove", path, std::errc::no_such_file_or_directory);
  }
  const std::string prefix = p + "/";
  auto end = store->nodes.lower_bound(prefix);
  while (end != store->nodes.end() && end->first.compare(0, prefix.size(), prefix) == 0) ++end;
  store->nodes.erase(it, end);
}

bool MemoryBackend::exists(const std::string& path) {
  checked(path);  // a relative path is std::invalid_argument, not "no"
  try {
    stat(path);
    return true;
  } catch (const std::filesystem::filesystem_error&) {
    return false;
  }
}

}  // namespace memory_backend
