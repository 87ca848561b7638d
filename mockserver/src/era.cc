#include "era.h"

namespace lizard::mock::internal {

const EraRules& era_rules(Era era) {
  static constexpr EraRules kKubernetes{
      .name = "kubernetes",
      .runtime = "container",
      .exec_envs = false,
      .exec_workdir = false,
      .exec_user = false,
      .image_environment = false,
      .create_envs = false,
      .keeps_metadata = false,
      .pid_event = false,
      .process_routes = false,
      .binary_uploads = false,
      .file_user = false,
      .pause_resume = false,
      .snapshots = false,
      .fork = false,
      .volume_shrink = true,
      .expose_token = false,
  };
  static constexpr EraRules kFirecracker{
      .name = "firecracker",
      .runtime = "firecracker",
      .exec_envs = true,
      .exec_workdir = true,
      .exec_user = true,
      .image_environment = true,
      .create_envs = true,
      .keeps_metadata = true,
      .pid_event = true,
      .process_routes = true,
      .binary_uploads = true,
      .file_user = true,
      .pause_resume = true,
      .snapshots = true,
      .fork = true,
      .volume_shrink = false,
      .expose_token = true,
  };
  return era == Era::kFirecracker ? kFirecracker : kKubernetes;
}

}  // namespace lizard::mock::internal
