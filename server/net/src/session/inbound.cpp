// Reading: bytes into frames, frames verified, messages dispatched by type.
// A malformed, oversized or unknown frame closes this connection only.
#include <spdlog/spdlog.h>

#include "session.hpp"

namespace bustle::net {

void Session::read_more() {
  socket_.async_read_some(asio::buffer(read_buf_),
                          [self = shared_from_this()](const asio::error_code& ec, std::size_t n) {
                            self->on_read(ec, n);
                          });
}

void Session::on_read(const asio::error_code& ec, std::size_t n) {
  if (phase_ == Phase::Closed) return;
  if (ec) {
    if (phase_ != Phase::Closing && ec != asio::error::eof) {
      spdlog::debug("client {} ({}): read error: {}", id_, peer_, ec.message());
    }
    // Closed first, then counted: a scrape that sees the disconnect no
    // longer counts the client as joined.
    const bool peer_closed = phase_ != Phase::Closing;
    if (peer_closed) {
      spdlog::debug("client_disconnect: client {} ({}): peer closed the connection", id_, peer_);
    }
    close_now();
    if (peer_closed) count_disconnect(kDisconnectPeerClosed);
    return;
  }
  if (phase_ == Phase::Closing) {
    // Drain and discard until the peer closes, so our Error frame is not
    // destroyed by a reset caused by unread input.
    read_more();
    return;
  }
  touch();
  decoder_.feed({read_buf_.data(), n});
  pump();
}

void Session::pump() {
  std::span<const std::uint8_t> payload;
  int handled = 0;
  while ((phase_ == Phase::AwaitHello || phase_ == Phase::Ready) && !over_soft_cap()) {
    if (handled++ == kFramesPerTurn) {
      asio::post(socket_.get_executor(), [self = shared_from_this()] {
        if (self->phase_ != Phase::Closed) self->pump();
      });
      return;
    }
    const proto::DecodeStatus st = decoder_.next(payload);
    if (st == proto::DecodeStatus::NeedMore) break;
    if (st == proto::DecodeStatus::FrameTooLarge) {
      fail(wire::ErrorCode::FrameTooLarge,
           "frame of " + std::to_string(decoder_.declared_length()) + " bytes exceeds the " +
               std::to_string(proto::kClientFrameMaxBytes) + "-byte cap");
      break;
    }
    if (st == proto::DecodeStatus::EmptyFrame) {
      fail(wire::ErrorCode::MalformedFrame, "zero-length frame");
      break;
    }
    handle_payload(payload);
  }
  if (phase_ == Phase::Closed) return;
  if ((phase_ == Phase::AwaitHello || phase_ == Phase::Ready) && over_soft_cap()) {
    read_paused_ = true;
    return;
  }
  read_more();
}

void Session::handle_payload(std::span<const std::uint8_t> payload) {
  std::string error;
  const wire::ClientFrame* frame = proto::verify_client_frame(payload, error);
  if (frame == nullptr) {
    fail(wire::ErrorCode::MalformedFrame, error);
    return;
  }
  const wire::ClientMessage type = frame->message_type();
  if (phase_ == Phase::AwaitHello) {
    if (type != wire::ClientMessage::Hello || frame->message_as_Hello() == nullptr) {
      fail(wire::ErrorCode::HandshakeRequired, "the first frame must be Hello");
      return;
    }
    handle_hello(*frame->message_as_Hello());
    return;
  }
  switch (type) {
    case wire::ClientMessage::Subscribe:
      if (frame->message_as_Subscribe() != nullptr)
        return handle_subscribe(*frame->message_as_Subscribe());
      break;
    case wire::ClientMessage::Command:
      if (frame->message_as_Command() != nullptr)
        return handle_command(*frame->message_as_Command());
      break;
    case wire::ClientMessage::UpdateInterest:
      if (frame->message_as_UpdateInterest() != nullptr) {
        return handle_update_interest(*frame->message_as_UpdateInterest());
      }
      break;
    case wire::ClientMessage::LeaseReport:
      if (frame->message_as_LeaseReport() != nullptr)
        return handle_lease_report(*frame->message_as_LeaseReport());
      break;
    case wire::ClientMessage::Hello:
      fail(wire::ErrorCode::UnknownMessage, "Hello is only valid as the first frame");
      return;
    default:
      break;
  }
  fail(wire::ErrorCode::UnknownMessage,
       "unknown message type " + std::to_string(static_cast<int>(type)));
}

}  // namespace bustle::net
