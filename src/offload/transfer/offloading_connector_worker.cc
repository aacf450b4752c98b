#include "offload/transfer/offloading_connector_worker.h"

#include <algorithm>
#include <thread>
#include <utility>

namespace strata::offload {

OffloadingConnectorWorker::OffloadingConnectorWorker(backend::KvMemoryHandle kv_memory,
                                                     std::shared_ptr<backend::Backend> backend,
                                                     const HostRegion& host,
                                                     const ChunkFormat& format)
    : worker_(std::move(kv_memory), std::move(backend), host, format) {}

void OffloadingConnectorWorker::submit(std::vector<TransferJob> jobs) {
  for (TransferJob& job : jobs) worker_.submit(std::move(job));
}

void OffloadingConnectorWorker::wait_for_progress(std::chrono::microseconds timeout) {
  if (worker_.num_in_flight() > 0) {
    worker_.wait_for_result(timeout);
  } else {
    std::this_thread::sleep_for(std::min<std::chrono::microseconds>(timeout, std::chrono::milliseconds(1)));
  }
}

}  // namespace strata::offload
