/*
 * cm_engine_command: the engine's commands as one message struct (see
 * cm/engine.h), dispatched to the individual calls.  Lengths inside the
 * message are checked here, since a message may come from another process.
 */
#include "config.h"

#include <errno.h>

#include "cm/cm_int.h"

int cm_engine_command(struct cm_engine *e, struct cm_command *cmd)
{
	int ret;

	if (!e || !cmd)
		return -EINVAL;
	switch (cmd->type) {
	case CM_CMD_T_CONNECT:
		return cm_engine_connect(e, &cmd->connect, &cmd->id);
	case CM_CMD_T_ACCEPT:
		return cm_engine_accept(e, cmd->id, cmd->user, &cmd->accept);
	case CM_CMD_T_REJECT:
		return cm_engine_reject(e, cmd->id, &cmd->reject);
	case CM_CMD_T_MRA:
		if (cmd->msg.private_data_len > CM_MRA_PRIVATE_DATA_SIZE)
			return -EINVAL;
		return cm_engine_mra(e, cmd->id, cmd->msg.service_timeout, cmd->msg.private_data,
				     cmd->msg.private_data_len);
	case CM_CMD_T_RTU:
		return cm_engine_rtu(e, cmd->id, cmd->msg.private_data, cmd->msg.private_data_len);
	case CM_CMD_T_ESTABLISH:
		return cm_engine_establish(e, cmd->id);
	case CM_CMD_T_DISCONNECT:
		return cm_engine_disconnect(e, cmd->id, cmd->msg.private_data,
					    cmd->msg.private_data_len);
	case CM_CMD_T_LAP:
		return cm_engine_lap(e, cmd->id, &cmd->lap.alternate, cmd->lap.private_data,
				     cmd->lap.private_data_len);
	case CM_CMD_T_APR:
		return cm_engine_apr(e, cmd->id, cmd->apr.status, cmd->apr.info, cmd->apr.info_len,
				     cmd->apr.private_data, cmd->apr.private_data_len);
	case CM_CMD_T_SIDR_REQ:
		return cm_engine_sidr_req(e, &cmd->sidr_req, &cmd->id);
	case CM_CMD_T_SIDR_REP:
		return cm_engine_sidr_rep(e, cmd->id, &cmd->sidr_rep);
	case CM_CMD_T_RELEASE:
		return cm_engine_release(e, cmd->id);
	case CM_CMD_T_LISTEN:
		ret = cm_engine_listen(e, cmd->listen.service_id, cmd->listen.mask, cmd->user);
		if (ret >= 0)
			cmd->listen.listen_id = ret;
		return ret < 0 ? ret : 0;
	case CM_CMD_T_UNLISTEN:
		return cm_engine_unlisten(e, cmd->listen.listen_id);
	default:
		return -EOPNOTSUPP;
	}
}
