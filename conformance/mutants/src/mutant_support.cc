#include "mutant_support.h"

namespace lizard::conformance::mutants {

bool has_errc(const std::filesystem::filesystem_error& e, std::errc code) {
  return e.code() == std::make_error_code(code);
}

std::string parent_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

namespace {

Mutant make_mutant(std::string name, std::string description, std::vector<std::string> targets,
                   std::string base, MutantSpec spec) {
  Mutant m;
  m.name = name;
  m.description = std::move(description);
  m.targets = std::move(targets);
  m.base = base;
  m.make_factory = [name, base, spec] {
    return wrap(base == "local" ? local_base() : lizard_base(), name, spec);
  };
  return m;
}

MutantSpec decorating(Decorator decorate) {
  MutantSpec spec;
  spec.decorate = std::move(decorate);
  return spec;
}

// `base` calls go to the wrapped backend; FileEditor forwards to it unless
// an edit is set.
class FileEditor : public ForwardingBackend {
 public:
  FileEditor(std::unique_ptr<WorkspaceBackend> inner, FileEdits edits)
      : ForwardingBackend(std::move(inner)),
        base_(std::make_unique<ForwardingBackend>(std::make_unique<Borrowed>(*this))),
        edits_(std::move(edits)) {}

  std::string read_bytes(const std::string& p) override {
    return edits_.read ? edits_.read(*base_, p) : ForwardingBackend::read_bytes(p);
  }
  void write_bytes(const std::string& p, const std::string& d) override {
    edits_.write ? edits_.write(*base_, p, d) : ForwardingBackend::write_bytes(p, d);
  }
  FileEntry stat(const std::string& p) override {
    return edits_.stat ? edits_.stat(*base_, p) : ForwardingBackend::stat(p);
  }
  std::vector<FileEntry> list_dir(const std::string& p) override {
    return edits_.list ? edits_.list(*base_, p) : ForwardingBackend::list_dir(p);
  }
  void make_dir(const std::string& p) override {
    edits_.make_dir ? edits_.make_dir(*base_, p) : ForwardingBackend::make_dir(p);
  }
  void remove(const std::string& p) override {
    edits_.remove ? edits_.remove(*base_, p) : ForwardingBackend::remove(p);
  }
  bool exists(const std::string& p) override {
    return edits_.exists ? edits_.exists(*base_, p) : ForwardingBackend::exists(p);
  }
  std::string realpath(const std::string& p) override {
    return edits_.realpath ? edits_.realpath(*base_, p) : ForwardingBackend::realpath(p);
  }

 private:
  // The wrapped backend, unedited, for the edits to call.
  class Borrowed : public WorkspaceBackend,
                   public workspace::SupportsCommands,
                   public workspace::SupportsFilesystem,
                   public workspace::SupportsRealpath {
   public:
    explicit Borrowed(FileEditor& owner) : owner_(owner) {}
    Capabilities capabilities() const override { return owner_.inner().capabilities(); }
    workspace::SupportsCommands* commands() override { return this; }
    workspace::SupportsFilesystem* filesystem() override { return this; }
    workspace::SupportsRealpath* realpath_support() override { return this; }
    std::optional<WorkspaceRef> ref() const override { return owner_.inner().ref(); }
    std::string working_dir() const override { return owner_.inner().working_dir(); }
    void destroy() override { owner_.inner().destroy(); }
    CommandResult run(const Command& c, const RunOptions& o) override {
      return owner_.inner().commands()->run(c, o);
    }
    std::string read_bytes(const std::string& p) override { return fs().read_bytes(p); }
    void write_bytes(const std::string& p, const std::string& d) override {
      fs().write_bytes(p, d);
    }
    FileEntry stat(const std::string& p) override { return fs().stat(p); }
    std::vector<FileEntry> list_dir(const std::string& p) override { return fs().list_dir(p); }
    void make_dir(const std::string& p) override { fs().make_dir(p); }
    void remove(const std::string& p) override { fs().remove(p); }
    bool exists(const std::string& p) override { return fs().exists(p); }
    std::string realpath(const std::string& p) override {
      return owner_.inner().realpath_support()->realpath(p);
    }

   private:
    workspace::SupportsFilesystem& fs() { return *owner_.inner().filesystem(); }
    FileEditor& owner_;
  };

  std::unique_ptr<ForwardingBackend> base_;
  FileEdits edits_;
};

}  // namespace

Decorator file_editor(FileEdits edits) {
  return [edits](std::unique_ptr<WorkspaceBackend> b, Origin) -> std::unique_ptr<WorkspaceBackend> {
    return std::make_unique<FileEditor>(std::move(b), edits);
  };
}

Mutant local_mutant(std::string name, std::string description, std::vector<std::string> targets,
                    MutantSpec spec) {
  return make_mutant(std::move(name), std::move(description), std::move(targets), "local",
                     std::move(spec));
}

Mutant local_mutant(std::string name, std::string description, std::vector<std::string> targets,
                    Decorator decorate) {
  return local_mutant(std::move(name), std::move(description), std::move(targets),
                      decorating(std::move(decorate)));
}

Mutant lizard_mutant(std::string name, std::string description, std::vector<std::string> targets,
                     MutantSpec spec) {
  return make_mutant(std::move(name), std::move(description), std::move(targets), "lizard",
                     std::move(spec));
}

Mutant lizard_mutant(std::string name, std::string description, std::vector<std::string> targets,
                     Decorator decorate) {
  return lizard_mutant(std::move(name), std::move(description), std::move(targets),
                       decorating(std::move(decorate)));
}

api::Client client_for(const Endpoint& endpoint) {
  api::ClientOptions options;
  options.api_url = endpoint.api_url;
  options.api_key = endpoint.api_key;
  options.project = endpoint.project;
  return api::Client(options);
}

}  // namespace lizard::conformance::mutants
