// The JSON shapes of the API's records: SandboxInfo, Project, VolumeInfo,
// FileInfo. Thread-compatible: the caller holds MockState's lock where the
// record may change (sandbox_json takes it).
#pragma once

#include <string>

#include "entities.h"
#include "json.h"
#include "lizard/mock/mock_server.h"
#include "sandbox_files.h"

namespace lizard::mock::internal {

class MockState;

void write_sandbox(JsonOut& j, const Sandbox& sb, Era era);
// Takes the state's lock: a sandbox's fields change under it.
std::string sandbox_json(const MockState& state, const Sandbox& sb);
void write_project(JsonOut& j, const Project& p);
std::string volume_json(const Volume& v);
void write_file_info(JsonOut& j, const FileInfo& f);

}  // namespace lizard::mock::internal
