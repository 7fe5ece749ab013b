/**
 * Queue threads for any device: a {@link io.virtio4j.devices.worker.QueueRunner} owns the thread, its CPU
 * pinning, its arena, the epoll set with the kick eventfds and the mailbox, and the idle policy; a device supplies
 * only a {@link io.virtio4j.devices.worker.QueueWorker}, the work of one pass (Agrona's Agent and AgentRunner,
 * rust-vmm's VringEpollHandler).
 */
package io.virtio4j.devices.worker;
