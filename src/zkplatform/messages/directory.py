"""The key directory's domain values <-> protobuf messages (directory.proto)."""

from __future__ import annotations

from zkplatform.domain.checkpoints import ServedCheckpoint
from zkplatform.domain.key_directory import DeviceAnswer, DevicesPage, KeyLogPage, ResetAnswer
from zkplatform.domain.key_log import Device, Leaf
from zkplatform_api.platform.v1 import directory_pb2


def device_to_proto(device: Device, message: directory_pb2.Device) -> None:
    message.device_id = device.device_id
    message.tenant_id = device.tenant_id
    message.principal_id = device.principal_id
    message.signing_jwk = device.signing_jwk
    message.agreement_key_id = device.agreement_key_id
    message.agreement_jwk = device.agreement_jwk
    message.endorser_device_id = device.endorser
    message.created_at.seconds = device.created_at
    message.log_index = device.log_index
    if device.revoked_at is not None:
        message.revoked_at.seconds = device.revoked_at


def entry_to_proto(leaf: Leaf, message: directory_pb2.KeyLogEntry) -> None:
    message.index = leaf.index
    message.data = leaf.data.decode()  # canonical JSON: UTF-8 by construction


def checkpoint_to_proto(checkpoint: ServedCheckpoint, message: directory_pb2.Checkpoint) -> None:
    message.note = checkpoint.note


def publish_response(answer: DeviceAnswer) -> directory_pb2.PublishDeviceResponse:
    response = directory_pb2.PublishDeviceResponse()
    device_to_proto(answer.device, response.device)
    entry_to_proto(answer.entry, response.entry)
    checkpoint_to_proto(answer.checkpoint, response.checkpoint)
    return response


def revoke_response(answer: DeviceAnswer) -> directory_pb2.RevokeDeviceResponse:
    response = directory_pb2.RevokeDeviceResponse()
    device_to_proto(answer.device, response.device)
    entry_to_proto(answer.entry, response.entry)
    checkpoint_to_proto(answer.checkpoint, response.checkpoint)
    return response


def reset_response(answer: ResetAnswer) -> directory_pb2.ResetPrincipalResponse:
    response = directory_pb2.ResetPrincipalResponse()
    entry_to_proto(answer.entry, response.entry)
    checkpoint_to_proto(answer.checkpoint, response.checkpoint)
    return response


def recipient_keys_response(page: DevicesPage) -> directory_pb2.GetRecipientKeysResponse:
    response = directory_pb2.GetRecipientKeysResponse(next_page_token=page.next_page_token)
    add = response.devices.add
    for device in page.devices:
        device_to_proto(device, add())
    checkpoint_to_proto(page.checkpoint, response.checkpoint)
    return response


def key_log_response(page: KeyLogPage) -> directory_pb2.ListKeyLogResponse:
    response = directory_pb2.ListKeyLogResponse(next_page_token=page.next_page_token)
    add = response.entries.add
    for leaf in page.entries:
        entry_to_proto(leaf, add())
    checkpoint_to_proto(page.checkpoint, response.checkpoint)
    if page.consistency_proof is not None:
        response.consistency_proof.extend(page.consistency_proof)
    return response
