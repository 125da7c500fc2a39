//! Writing an Instance's status: each controller changes only its own fields through a
//! read-modify-write guarded by `resourceVersion`, and nothing is written when the result is
//! what is stored already.

use kube::Api;
use kube::api::PostParams;
use kube_kit::client::is_not_found;

use super::Error;
use crate::instance::{Instance, InstanceStatus};

/// Attempts before a status write that keeps conflicting gives up.
const MAX_CONFLICT_RETRIES: usize = 5;

/// Reads the Instance `name`, applies `mutate` to a copy of its status and writes it back if it
/// changed, retrying on conflicts. Returns `Ok(true)` when a write was issued, `Ok(false)` when
/// the status already matched or the Instance is gone.
pub async fn update_status(
    api: &Api<Instance>,
    name: &str,
    mutate: impl Fn(&Instance, &mut InstanceStatus),
) -> Result<bool, Error> {
    for _ in 0..MAX_CONFLICT_RETRIES {
        let Some(mut instance) = api
            .get_opt(name)
            .await
            .map_err(Error::kube("read Instance", name))?
        else {
            return Ok(false);
        };
        let mut status = instance.status.clone().unwrap_or_default();
        mutate(&instance, &mut status);
        if instance.status.as_ref() == Some(&status) {
            return Ok(false);
        }
        instance.status = Some(status);
        match api
            .replace_status(name, &PostParams::default(), &instance)
            .await
        {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(err) if is_not_found(&err) => return Ok(false),
            Err(source) => {
                return Err(Error::Kube {
                    action: "write status of Instance",
                    object: name.to_owned(),
                    source,
                });
            }
        }
    }
    Err(Error::Kube {
        action: "write status of Instance (conflicts persisted)",
        object: name.to_owned(),
        source: kube::Error::Api(Box::new(
            kube::core::Status::failure("the object keeps changing", "Conflict").with_code(409),
        )),
    })
}
