// Helpers the catalogue files share: how a mutant entry is made, the
// file-call editor, small path and error helpers. Internal to
// lizard_conformance_mutants.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "lizard/api/client.h"
#include "mutant_factory.h"

namespace lizard::conformance::mutants {

// Whether a filesystem_error carries `code`.
bool has_errc(const std::filesystem::filesystem_error& e, std::errc code);

// The parent directory of an absolute path ("/" for "/x").
std::string parent_of(const std::string& path);

// A decorator that wraps every backend in a T(std::move(backend)).
template <typename T>
Decorator plain() {
  return [](std::unique_ptr<WorkspaceBackend> b, Origin) -> std::unique_ptr<WorkspaceBackend> {
    return std::make_unique<T>(std::move(b));
  };
}

// A mutant of LocalWorkspaceBackend / of LizardSandboxBackend on the embedded mock.
Mutant local_mutant(std::string name, std::string description, std::vector<std::string> targets,
                    MutantSpec spec);
Mutant local_mutant(std::string name, std::string description, std::vector<std::string> targets,
                    Decorator decorate);
Mutant lizard_mutant(std::string name, std::string description, std::vector<std::string> targets,
                     MutantSpec spec);
Mutant lizard_mutant(std::string name, std::string description, std::vector<std::string> targets,
                     Decorator decorate);

// A decorator with every filesystem call overridable by a lambda; the
// ForwardingBackend handed to a lambda is the wrapped backend, unedited.
struct FileEdits {
  std::function<std::string(ForwardingBackend&, const std::string&)> read;
  std::function<void(ForwardingBackend&, const std::string&, const std::string&)> write;
  std::function<FileEntry(ForwardingBackend&, const std::string&)> stat;
  std::function<std::vector<FileEntry>(ForwardingBackend&, const std::string&)> list;
  std::function<void(ForwardingBackend&, const std::string&)> make_dir;
  std::function<void(ForwardingBackend&, const std::string&)> remove;
  std::function<bool(ForwardingBackend&, const std::string&)> exists;
  std::function<std::string(ForwardingBackend&, const std::string&)> realpath;
};
Decorator file_editor(FileEdits edits);

// A client of the session's mock, for mutants that send requests of their own.
api::Client client_for(const Endpoint& endpoint);

// The catalogue, by area (each file adds its entries).
void add_env_and_command_mutants(std::vector<Mutant>& out);
void add_file_and_realpath_mutants(std::vector<Mutant>& out);
void add_hostile_mutants(std::vector<Mutant>& out);

}  // namespace lizard::conformance::mutants
