// Volumes of a project: create, list, get and delete.
#include "lizard/api/client.h"
#include "wire_codec.h"

namespace lizard::api {

using internal::escape_segment;
using internal::project_path;

VolumeInfo Client::create_volume(std::string_view project_id, const CreateVolumeRequest& request,
                                 const CallOptions& call) {
  const std::string body = internal::encode_create_volume(request);
  const Exchange exchange{
      .method = "POST", .path = project_path(project_id, "/volumes"), .body = body};
  return internal::decode_volume(checked(exchange, call).body, operation(exchange));
}

std::vector<VolumeInfo> Client::list_volumes(std::string_view project_id, const CallOptions& call) {
  const Exchange exchange{.method = "GET", .path = project_path(project_id, "/volumes")};
  return internal::decode_volumes(checked(exchange, call).body, operation(exchange));
}

VolumeInfo Client::get_volume(std::string_view project_id, std::string_view name_or_id,
                              const CallOptions& call) {
  const Exchange exchange{
      .method = "GET", .path = project_path(project_id, "/volumes/" + escape_segment(name_or_id))};
  return internal::decode_volume(checked(exchange, call).body, operation(exchange));
}

void Client::delete_volume(std::string_view project_id, std::string_view name_or_id,
                           const CallOptions& call) {
  checked({.method = "DELETE",
           .path = project_path(project_id, "/volumes/" + escape_segment(name_or_id))},
          call);
}

}  // namespace lizard::api
